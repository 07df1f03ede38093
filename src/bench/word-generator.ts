import type { SeededRng } from './seeded-rng.js';

// Short, frequent English words: with a leading space each is one token in common BPE
// vocabularies, so a prompt of N words is close to N tokens on most servers.
const WORDS = (
  'the of and to in is it you that he was for on are as with his they at be this have from ' +
  'or one had by word but not what all were we when your can said there use an each which ' +
  'she do how their if will up other about out many then them these so some her would make ' +
  'like him into time has look two more write go see number no way could people my than ' +
  'first water been call who oil its now find long down day did get come made may part over ' +
  'new sound take only little work know place year live me back give most very after thing ' +
  'our just name good man think say great where help through much before line right too mean ' +
  'old any same tell boy follow came want show also around form three small set put end does ' +
  'another well large must big even such because turn here why ask went men read need land ' +
  'different home us move try kind hand picture again change off play spell air away animal ' +
  'house point page letter mother answer found study still learn should world high every near ' +
  'add food between own below country plant last school father keep tree never start city ' +
  'earth eye light thought head under story saw left few while along might close something ' +
  'seem next hard open example begin life always those both paper together got group often run'
).split(' ');

export const NUM_WORDS = WORDS.length;

/** `numWords` space-separated words drawn uniformly with the given RNG. */
export function randomWords(rng: SeededRng, numWords: number): string {
  const out = new Array<string>(numWords);
  for (let i = 0; i < numWords; i++) out[i] = WORDS[rng.int(0, WORDS.length - 1)] as string;
  return out.join(' ');
}
