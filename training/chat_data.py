"""Short plain chat: greetings, questions about the model, thanks, goodbyes, simple facts and
refusals. The reply is plain content; the reasoning stays a short line inside <mm:think>."""
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


def chat(rng):
    """(user, reasoning, content) for one exchange."""
    if rng.random() < 0.2:
        c, cap = rng.choice(CAPITALS)
        return rng.choice(CAPITAL_Q).format(c=c), "A simple fact.", f"The capital of {c} is {cap}."
    users, why, answers = rng.choice(TOPICS)
    return rng.choice(users), why, rng.choice(answers)
