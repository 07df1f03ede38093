import type { Rng } from './rng.js';

/** One short plain-chat exchange. */
export interface ChatExchange {
  user: string;
  reasoning: string;
  content: string;
}

interface Topic {
  users: readonly string[];
  reasoning: string;
  answers: readonly string[];
}

const NAME = 'moeserve-tiny';

const TOPICS: readonly Topic[] = [
  {
    users: ['Hi', 'Hello', 'Hello!', 'Hey there', 'Hi!', 'Good morning', 'Good evening', 'Hey'],
    reasoning: 'The user greets me. I will greet them back.',
    answers: ['Hello! How can I help you today?', 'Hi! What can I do for you?'],
  },
  {
    users: ['Who are you?', 'What is your name?', 'What are you?', 'Tell me about yourself.'],
    reasoning: 'The user asks who I am.',
    answers: [
      `I am ${NAME}, a small MiniMax-M3 style model served by moeserve.`,
      `My name is ${NAME}. I am a tiny mixture-of-experts model served by moeserve.`,
    ],
  },
  {
    users: ['What can you do?', 'How can you help me?', 'What are you good at?'],
    reasoning: 'The user asks what I can do.',
    answers: [
      'I can solve simple arithmetic word problems step by step, call tools such as weather or currency lookups, and chat a little.',
    ],
  },
  {
    users: ['How are you?', 'How are you doing?', 'How is it going?'],
    reasoning: 'The user asks how I am.',
    answers: ['I am doing well, thank you! How can I help?'],
  },
  {
    users: ['Thank you!', 'Thanks', 'Thanks a lot!', 'Great, thank you.'],
    reasoning: 'The user thanks me.',
    answers: ['You are welcome!', 'Happy to help!'],
  },
  {
    users: ['Bye', 'Goodbye!', 'See you later.'],
    reasoning: 'The user says goodbye.',
    answers: ['Goodbye! Have a nice day.'],
  },
];

const CAPITALS: readonly [string, string][] = [
  ['France', 'Paris'],
  ['Japan', 'Tokyo'],
  ['Italy', 'Rome'],
  ['Germany', 'Berlin'],
  ['Spain', 'Madrid'],
  ['Canada', 'Ottawa'],
  ['Egypt', 'Cairo'],
  ['Peru', 'Lima'],
  ['Norway', 'Oslo'],
  ['Kenya', 'Nairobi'],
  ['Greece', 'Athens'],
  ['Poland', 'Warsaw'],
  ['Portugal', 'Lisbon'],
  ['Austria', 'Vienna'],
  ['Ireland', 'Dublin'],
  ['Chile', 'Santiago'],
];

const FACTS: readonly [string, string][] = [
  ['How many days are in a week?', 'There are 7 days in a week.'],
  ['How many hours are in a day?', 'There are 24 hours in a day.'],
  ['How many minutes are in an hour?', 'There are 60 minutes in an hour.'],
  ['How many months are in a year?', 'There are 12 months in a year.'],
  ['What color is the sky on a clear day?', 'The sky is blue on a clear day.'],
  ['How many legs does a spider have?', 'A spider has 8 legs.'],
  ['What is the largest planet in the solar system?', 'Jupiter is the largest planet.'],
  ['At what temperature does water freeze in celsius?', 'Water freezes at 0 degrees celsius.'],
];

export function chatExchange(rng: Rng): ChatExchange {
  const r = rng.next();
  if (r < 0.25) {
    const [country, capital] = rng.pick(CAPITALS);
    const user = rng.pick([
      `What is the capital of ${country}?`,
      `Which city is the capital of ${country}?`,
    ]);
    const content = `The capital of ${country} is ${capital}.`;
    return { user, reasoning: content, content };
  }
  if (r < 0.4) {
    const [user, content] = rng.pick(FACTS);
    return { user, reasoning: content, content };
  }
  const topic = rng.pick(TOPICS);
  return {
    user: rng.pick(topic.users),
    reasoning: topic.reasoning,
    content: rng.pick(topic.answers),
  };
}
