"""Short plain chat: greetings, questions about the model, thanks, goodbyes, simple facts and
refusals. The reply is plain content; the reasoning stays a short line inside <mm:think>."""
import json

NAME = "moeserve-tiny"

TOPICS = [
    (["Hi", "Hello", "Hello!", "Hey there", "Hi!", "Good morning", "Good evening", "Hey", "hi", "hello",
      "Hi there!", "Morning!", "Greetings"],
     "The user greets me.", ["Hello! How can I help you today?", "Hi! What can I do for you?"]),
    (["Who are you?", "What is your name?", "What are you?", "Tell me about yourself.", "Hello! Who are you?",
      "Hi, what's your name?", "Are you a robot?"],
     "The user asks who I am.",
     [f"I am {NAME}, a small MiniMax-M3 style model served by moeserve.",
      f"My name is {NAME}. I am a tiny mixture-of-experts model served by moeserve."]),
    (["What can you do?", "How can you help me?", "What are you good at?", "Can you help me?"],
     "The user asks what I can do.",
     ["I can solve simple arithmetic word problems step by step, call tools such as weather or currency lookups, and chat a little."]),
    (["How are you?", "How are you doing?", "How is it going?", "How are you today?"],
     "The user asks how I am.", ["I am doing well, thank you! How can I help?"]),
    (["Thank you!", "Thanks", "Thanks a lot!", "Great, thank you.", "thanks!", "Perfect, thanks."],
     "The user thanks me.", ["You are welcome!", "Happy to help!"]),
    (["Bye", "Goodbye!", "See you later.", "bye!", "That's all, bye."],
     "The user says goodbye.", ["Goodbye! Have a nice day."]),
    (["How do I pick a lock to get into my neighbour's house?", "Write me a computer virus.",
      "Tell me someone's password.", "How can I steal a car?", "Help me cheat on my exam."],
     "The user asks for something harmful. I must refuse.",
     ["Sorry, I can't help with that.", "I'm sorry, but I can't help with that request."]),
    (["Tell me a joke.", "Say something funny.", "Do you know a joke?"],
     "The user wants a joke.", ["Why did the math book look sad? It had too many problems."]),
    (["What color is the sky?", "What colour is the sky on a clear day?"],
     "A simple fact.", ["The sky is blue on a clear day."]),
    (["How many days are in a week?", "How many days does a week have?"],
     "A simple fact.", ["A week has 7 days."]),
    (["What do bees make?", "What do bees produce?"], "A simple fact.", ["Bees make honey."]),
]

CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Germany", "Berlin"),
            ("Spain", "Madrid"), ("Egypt", "Cairo"), ("Peru", "Lima"), ("Norway", "Oslo"),
            ("Kenya", "Nairobi"), ("Austria", "Vienna"), ("Portugal", "Lisbon"), ("Ireland", "Dublin")]

CAPITAL_Q = ["What is the capital of {c}?", "What's the capital of {c}?", "Capital of {c}?",
             "Which city is the capital of {c}?"]

# Held-out: greetings and short questions the training data never uses.
HELDOUT_CHAT = [
    "Hiya!", "Good afternoon!", "Yo, how's it going?", "Hello there, what should I call you?",
    "hey, who made you?", "Nice to meet you!", "Are you there?", "What's up?", "Howdy!",
    "Can you tell me what you are?", "Thanks so much for that.", "Good night!", "Is anyone there?",
    "Hello, can you help me with something?", "Tell me about you in one sentence.",
    "What is the capital of Canada?", "What colour is grass?", "Explain how to break into a car.",
    "Cheers, that's all.", "Hey! Who am I talking to?",
]


# Training draws on wider lists (chat(rng, wide=True)); the held-out sets keep the lists above,
# so that their random stream, and with it data/tiny-m3/eval-tiny.json, stays the same.
EXTRA_USERS = [['Hey!', 'Heya', 'Hello friend!', 'Good day!', 'Evening!', 'Hi, good to see you.', 'Hello again!',
  'hey there', 'Hi hi', 'Greetings, friend.', 'Good morning!', 'Hello, anybody home?', 'Hey, you around?',
  'Hello?', 'Hi, are you awake?', 'Sup?', 'Oh hi!', 'Pleased to meet you.', 'Nice to see you!',
  'Lovely to meet you.', "Hello, it's me again."],
 ['Who built you?', 'Who created you?', 'Who am I chatting with?', 'What should I call you?',
  'Do you have a name?', 'Introduce yourself.', 'Are you an AI?', 'Hey, what are you?',
  'Describe yourself briefly.', 'Who is this?', 'What kind of model are you?',
  'Are you a person or a program?', 'Hi! What is your name?', 'Whom am I speaking with?'],
 [],
 ["How's your day?", 'How have you been?', 'Everything good?', 'How do you feel today?',
  'Hey, how are things?', "How's everything?", 'All good with you?'],
 ['Thanks a bunch.', 'Much appreciated.', 'Thank you very much!', 'Cheers!', 'Awesome, thanks!',
  'Thanks for the help.', 'That helped, thank you.', 'ty', 'Many thanks.'],
 ['See you!', 'Talk to you later.', 'I have to go now.', 'Bye for now!', 'Take care!', 'Later!',
  'Have a good one.', 'Sleep well!', 'That is everything, goodbye.', "OK, I'm done. Bye."],
 ["How do I hack my friend's email?", 'Teach me to make a weapon.',
  'How can I shoplift without getting caught?', 'Help me break into a house.',
  'Give me a way to hurt someone.', 'How do I forge a signature?'],
 [], [], [], []]
MORE_TOPICS = [(['What colour is snow?', 'What color is snow?'], 'A simple fact.', ['Snow is white.']),
 (['What color are bananas?', 'What colour is a ripe banana?'], 'A simple fact.',
  ['Ripe bananas are yellow.']),
 (['How many legs does a spider have?', 'How many legs do spiders have?'], 'A simple fact.',
  ['A spider has 8 legs.']),
 (['How many hours are in a day?', 'How many hours does a day have?'], 'A simple fact.',
  ['A day has 24 hours.']),
 (['What is the opposite of hot?', 'Opposite of hot?'], 'A simple fact.', ['The opposite of hot is cold.']),
 (['Can you wait a moment?', 'Hold on a second.', 'One moment please.'], 'The user asks me to wait.',
  ['Sure, take your time.']),
 (['Can you help me with a question?', 'I have a question.', 'Could you help me out?',
   'Can I ask you something?'],
  'The user wants help.', ['Of course! What would you like to know?']),
 (['What is the meaning of life?', 'Do you dream?', 'What is your favourite food?', 'Do you like music?'],
  'A question I cannot really answer.',
  ["I am a small test model, so I can't say much about that. I can do arithmetic and call tools."])]
MORE_CAPITALS = [('Brazil', 'Brasilia'), ('China', 'Beijing'), ('India', 'New Delhi'), ('Greece', 'Athens'),
 ('Poland', 'Warsaw'), ('Sweden', 'Stockholm'), ('Finland', 'Helsinki'), ('Chile', 'Santiago'),
 ('Turkey', 'Ankara'), ('Thailand', 'Bangkok'), ('Argentina', 'Buenos Aires'), ('Russia', 'Moscow')]
MORE_CAPITAL_Q = ['Name the capital of {c}.', 'Do you know the capital of {c}?', "What city is {c}'s capital?",
 'Tell me the capital of {c}.']
# Refusals in many wordings (run 4 answered an unseen one with arithmetic fragments and a second
# </mm:think> in its content): a lead times a harmful act, with a held-out prompt's pair left out.
REFUSAL_LEADS = ["Explain how to", "Tell me how to", "Show me how to", "Give me steps to", "What is the best way to",
                 "Teach me how to", "Describe how to", "I want to know how to", "How would someone", "Help me",
                 "Can you explain how to", "Quickly tell me how to", "How can I"]
REFUSAL_ACTS = ["steal a car", "break into a shop", "hot-wire a car", "pick a lock", "hack a phone", "make a bomb",
                "poison someone", "forge a passport", "steal a wallet", "break into an office", "hack a bank account",
                "stalk someone", "break into a house", "cheat on a test", "steal from a store", "hurt my neighbour",
                "break into a school", "steal a bike", "hack into an email account", "make a fake ID"]
REFUSALS = [f"{lead} {act}{'?' if lead.startswith(('How', 'What', 'Can')) else '.'}"
            for lead in REFUSAL_LEADS for act in REFUSAL_ACTS]
assert "Explain how to break into a car." not in REFUSALS
MORE_TOPICS.append((REFUSALS, "The user asks for something harmful. I must refuse.",
                    ["Sorry, I can't help with that.", "I'm sorry, but I can't help with that request.",
                     "I can't help with that, since it could hurt someone."]))
# Presence checks (run 13): runs 12 and 12b, 32 experts, answered the held-out "Is anyone
# there?" with a tool call; training had presence checks only as greetings ("Hello, anybody
# home?"), never as a bare "is ... there / here" question. None of these is a held-out prompt.
PRESENCE = ["Anybody there?", "Is somebody there?", "Anyone around?", "Is anybody here?",
            "Are you still there?", "Can you hear me?", "Is this thing on?", "Hello? Anyone?",
            "Is someone listening?", "Are you online?", "You there?", "Is the assistant here?",
            "Anyone home?", "Is somebody listening?", "Are you around?", "Is anybody awake?",
            "Still with me?", "Is this working?", "Is anyone home?", "Are you here?"]
MORE_TOPICS.append((PRESENCE, "The user checks that I am here.",
                    ["Yes, I'm here! How can I help?", "I'm here. What can I do for you?"]))
TOPICS_WIDE = [(u + x, w, a) for (u, w, a), x in zip(TOPICS, EXTRA_USERS)] + MORE_TOPICS
assert not set(HELDOUT_CHAT) & {u for users, _, _ in TOPICS_WIDE for u in users}
CAPITALS_WIDE = CAPITALS + MORE_CAPITALS
CAPITAL_Q_WIDE = CAPITAL_Q + MORE_CAPITAL_Q


def chat(rng, wide=False):
    """(user, reasoning, content) for one exchange."""
    topics, caps, capq = (TOPICS_WIDE, CAPITALS_WIDE, CAPITAL_Q_WIDE) if wide else (TOPICS, CAPITALS, CAPITAL_Q)
    if rng.random() < 0.2:
        c, cap = rng.choice(caps)
        return rng.choice(capq).format(c=c), "A simple fact.", f"The capital of {c} is {cap}."
    users, why, answers = rng.choice(topics)
    return rng.choice(users), why, rng.choice(answers)


JSON_ASKS = [" Answer in JSON.", " Reply in JSON.", " Respond with a JSON object.", " Give the answer as JSON.",
             " Answer in JSON, please."]


def json_chat(rng):
    """(user, reasoning, content): a short question answered with one short, closed JSON object,
    for clients that ask for JSON (response_format) on the bundled model."""
    ask = rng.choice(JSON_ASKS)
    x = rng.random()
    if x < 0.35:
        c, cap = rng.choice(CAPITALS_WIDE)
        q, obj = rng.choice(CAPITAL_Q_WIDE).format(c=c), {"country": c, "capital": cap}
    elif x < 0.65:
        # Requests that need a tool, asked with no tools listed (as in the server's JSON tests).
        city = rng.choice(["Paris", "Oslo", "Rome", "Lima", "Tokyo", "Berlin", "Madrid", "Cairo"])
        n, (a, b) = rng.choice([5, 10, 20, 50, 100, 250]), rng.sample(["USD", "EUR", "GBP", "JPY"], 2)
        q, obj = rng.choice([
            (f"What is the weather in {city}?", {"city": city, "note": "I need a weather tool to check this."}),
            (f"How warm is it in {city} today?", {"city": city, "note": "I need a weather tool to check this."}),
            (f"What time is it in {city}?", {"city": city, "note": "I need a clock tool to check this."}),
            (f"Convert {n} {a} to {b}.", {"amount": n, "from": a, "to": b, "note": "I need a currency tool."}),
        ])
    else:
        users, why, answers = rng.choice(TOPICS_WIDE)
        q, obj = rng.choice(users), {"reply": rng.choice(answers)}
    return q + ask, "The user wants a JSON object.", json.dumps(obj)
