import type { JsonSchemaProperty, ToolArguments, ToolSpec } from './m3-format.js';
import type { Rng } from './rng.js';

/** One tool request: what the user asks, the call it needs, what the tool returns, the reply. */
export interface ToolRequest {
  user: string;
  /** Reasoning before the call, e.g. "The user wants the weather in Paris." */
  why: string;
  args: ToolArguments;
  result: Record<string, string | number>;
  /** The final answer using the result. */
  answer: string;
}

export interface ToolDef {
  spec: ToolSpec;
  make(rng: Rng): ToolRequest;
}

const CITIES = [
  'Paris',
  'London',
  'Tokyo',
  'Berlin',
  'Madrid',
  'Rome',
  'Cairo',
  'Lima',
  'Oslo',
  'Seoul',
  'Sydney',
  'Toronto',
  'Chicago',
  'Mumbai',
  'Lagos',
  'Dublin',
  'Vienna',
  'Prague',
  'Lisbon',
  'Nairobi',
  'Bangkok',
  'Denver',
  'Boston',
  'Athens',
  'Warsaw',
  'Hanoi',
  'Quito',
  'Zurich',
  'Helsinki',
  'Manila',
  'Santiago',
  'Istanbul',
  'Dubai',
  'Austin',
  'Seattle',
  'Milan',
];
const COUNTRIES = [
  'France',
  'Japan',
  'Brazil',
  'Kenya',
  'Canada',
  'Peru',
  'Norway',
  'India',
  'Egypt',
  'Spain',
  'Chile',
  'Poland',
  'Vietnam',
  'Ghana',
  'Mexico',
  'Sweden',
  'Greece',
  'Nepal',
  'Italy',
  'Chad',
];
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'INR', 'CNY', 'SEK'];
const CONDITIONS = ['sunny', 'cloudy', 'rainy', 'windy', 'snowy', 'foggy', 'clear'];
const PEOPLE = ['anna', 'bob', 'carla', 'dev', 'elena', 'femi', 'gus', 'hiro', 'ines', 'jon'];
const SUBJECTS = ['Meeting notes', 'Lunch tomorrow', 'Project update', 'Weekend plans', 'Invoice'];

function prop(
  type: JsonSchemaProperty['type'],
  description: string,
  values?: string[],
): JsonSchemaProperty {
  return values ? { type, description, enum: values } : { type, description };
}

function spec(
  name: string,
  description: string,
  props: Record<string, JsonSchemaProperty>,
  required: string[],
): ToolSpec {
  return {
    type: 'function',
    function: { name, description, parameters: { type: 'object', properties: props, required } },
  };
}

function randomSymbol(rng: Rng): string {
  const n = rng.int(3, 4);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(65 + rng.int(0, 25));
  return s;
}

function twoDigitTime(rng: Rng): string {
  return `${String(rng.int(0, 23)).padStart(2, '0')}:${String(rng.int(0, 59)).padStart(2, '0')}`;
}

const weather: ToolDef = {
  spec: spec(
    'get_weather',
    'Get the current weather in a city.',
    {
      city: prop('string', 'The city name'),
      unit: prop('string', 'Temperature unit', ['celsius', 'fahrenheit']),
    },
    ['city'],
  ),
  make(rng) {
    const city = rng.pick(CITIES);
    const withUnit = rng.chance(0.4);
    const unit = withUnit ? rng.pick(['celsius', 'fahrenheit']) : 'celsius';
    const temperature = unit === 'celsius' ? rng.int(-10, 38) : rng.int(14, 100);
    const condition = rng.pick(CONDITIONS);
    const base = rng.pick([
      `What is the weather in ${city}?`,
      `How is the weather in ${city} right now?`,
      `Is it warm in ${city} today?`,
      `Tell me the weather for ${city}.`,
    ]);
    const user = withUnit ? `${base.slice(0, -1)} in ${unit}?` : base;
    const args: ToolArguments = withUnit ? { city, unit } : { city };
    return {
      user,
      args,
      why: `The user wants the weather in ${city}. I will call get_weather.`,
      result: { city, temperature, unit, condition },
      answer: `It is ${temperature} degrees ${unit} and ${condition} in ${city}.`,
    };
  },
};

const time: ToolDef = {
  spec: spec(
    'get_time',
    'Get the current local time in a city.',
    { city: prop('string', 'The city name') },
    ['city'],
  ),
  make(rng) {
    const city = rng.pick(CITIES);
    const t = twoDigitTime(rng);
    return {
      user: rng.pick([
        `What time is it in ${city}?`,
        `What is the local time in ${city}?`,
        `Tell me the time in ${city}.`,
      ]),
      why: `The user asks for the time in ${city}. I will call get_time.`,
      args: { city },
      result: { city, time: t },
      answer: `The local time in ${city} is ${t}.`,
    };
  },
};

const currency: ToolDef = {
  spec: spec(
    'convert_currency',
    'Convert an amount of money from one currency to another.',
    {
      amount: prop('integer', 'The amount to convert'),
      from_currency: prop('string', 'Currency code to convert from, like USD'),
      to_currency: prop('string', 'Currency code to convert to, like EUR'),
    },
    ['amount', 'from_currency', 'to_currency'],
  ),
  make(rng) {
    const [from, to] = rng.shuffle(CURRENCIES);
    const amount = rng.pick([5, 10, 20, 25, 50, 75, 100, 200, 250, 500, 1000]) * rng.int(1, 3);
    const converted = Math.max(1, Math.round(amount * (0.5 + rng.next() * 1.5)));
    const a = String(from);
    const b = String(to);
    return {
      user: rng.pick([
        `How much is ${amount} ${a} in ${b}?`,
        `Convert ${amount} ${a} to ${b}.`,
        `What is ${amount} ${a} in ${b}?`,
      ]),
      why: `The user wants to convert ${amount} ${a} to ${b}. I will call convert_currency.`,
      args: { amount, from_currency: a, to_currency: b },
      result: { amount, from: a, to: b, result: converted },
      answer: `${amount} ${a} is about ${converted} ${b}.`,
    };
  },
};

const stock: ToolDef = {
  spec: spec(
    'get_stock_price',
    'Get the latest price of a stock by its ticker symbol.',
    { symbol: prop('string', 'The ticker symbol') },
    ['symbol'],
  ),
  make(rng) {
    const symbol = randomSymbol(rng);
    const price = rng.int(5, 900);
    return {
      user: rng.pick([
        `What is the stock price of ${symbol}?`,
        `How much is ${symbol} trading at?`,
        `Check the price of ${symbol} stock.`,
      ]),
      why: `The user wants the price of ${symbol}. I will call get_stock_price.`,
      args: { symbol },
      result: { symbol, price, currency: 'USD' },
      answer: `${symbol} is trading at ${price} USD.`,
    };
  },
};

const population: ToolDef = {
  spec: spec(
    'get_population',
    'Get the population of a country in millions.',
    { country: prop('string', 'The country name') },
    ['country'],
  ),
  make(rng) {
    const country = rng.pick(COUNTRIES);
    const millions = rng.int(2, 300);
    return {
      user: rng.pick([
        `What is the population of ${country}?`,
        `How many people live in ${country}?`,
      ]),
      why: `The user asks about the population of ${country}. I will call get_population.`,
      args: { country },
      result: { country, population_millions: millions },
      answer: `${country} has about ${millions} million people.`,
    };
  },
};

const timer: ToolDef = {
  spec: spec(
    'set_timer',
    'Start a countdown timer.',
    {
      minutes: prop('integer', 'Length of the timer in minutes'),
      label: prop('string', 'A short name for the timer'),
    },
    ['minutes'],
  ),
  make(rng) {
    const minutes = rng.int(1, 90);
    const label = rng.pick(['tea', 'pasta', 'laundry', 'workout', 'nap', 'oven']);
    const named = rng.chance(0.5);
    return {
      user: named
        ? `Set a ${minutes} minute timer for the ${label}.`
        : rng.pick([`Set a timer for ${minutes} minutes.`, `Start a ${minutes} minute timer.`]),
      why: `The user wants a ${minutes} minute timer. I will call set_timer.`,
      args: (named ? { minutes, label } : { minutes }) as ToolArguments,
      result: { status: 'started', minutes },
      answer: `Your ${minutes} minute timer has started.`,
    };
  },
};

const TRANSLATIONS: Record<string, Record<string, string>> = {
  hello: { French: 'bonjour', Spanish: 'hola', German: 'hallo', Italian: 'ciao' },
  'thank you': { French: 'merci', Spanish: 'gracias', German: 'danke', Italian: 'grazie' },
  'good night': {
    French: 'bonne nuit',
    Spanish: 'buenas noches',
    German: 'gute Nacht',
    Italian: 'buona notte',
  },
  'good morning': {
    French: 'bonjour',
    Spanish: 'buenos dias',
    German: 'guten Morgen',
    Italian: 'buongiorno',
  },
};

const translate: ToolDef = {
  spec: spec(
    'translate',
    'Translate a short text into another language.',
    {
      text: prop('string', 'The text to translate'),
      target_language: prop('string', 'The language to translate into'),
    },
    ['text', 'target_language'],
  ),
  make(rng) {
    const text = rng.pick(Object.keys(TRANSLATIONS));
    const lang = rng.pick(['French', 'Spanish', 'German', 'Italian']);
    const out = TRANSLATIONS[text]?.[lang] ?? text;
    return {
      user: rng.pick([`Translate "${text}" into ${lang}.`, `How do you say "${text}" in ${lang}?`]),
      why: `The user wants "${text}" in ${lang}. I will call translate.`,
      args: { text, target_language: lang },
      result: { translation: out },
      answer: `In ${lang}, "${text}" is "${out}".`,
    };
  },
};

const email: ToolDef = {
  spec: spec(
    'send_email',
    'Send a short email.',
    {
      to: prop('string', 'The email address of the recipient'),
      subject: prop('string', 'The subject line'),
    },
    ['to', 'subject'],
  ),
  make(rng) {
    const to = `${rng.pick(PEOPLE)}@example.com`;
    const subject = rng.pick(SUBJECTS);
    return {
      user: rng.pick([
        `Send an email to ${to} with the subject "${subject}".`,
        `Email ${to} about "${subject}".`,
      ]),
      why: `The user wants an email sent to ${to}. I will call send_email.`,
      args: { to, subject },
      result: { status: 'sent', to },
      answer: `I sent the email "${subject}" to ${to}.`,
    };
  },
};

export const TOOLS: readonly ToolDef[] = [
  weather,
  time,
  currency,
  stock,
  population,
  timer,
  translate,
  email,
];
