"""The eight tools of the TypeScript generator (src/datagen/tool-catalog.ts) with the same
schemas, so that the model keeps calling them as the server tests and `eval tool-loop`
scenarios do. Four names (get_weather, convert_currency, send_email, ...) also exist in
tool_catalog.py with other parameters: the model must read the schema it is given."""
from tool_catalog import HELDOUT_CITIES, tool

CITIES = [c for c in (
    "Paris London Tokyo Berlin Madrid Rome Cairo Lima Oslo Seoul Sydney Toronto Chicago Mumbai Lagos "
    "Dublin Vienna Prague Lisbon Nairobi Bangkok Denver Boston Athens Warsaw Zurich Helsinki Manila "
    "Santiago Istanbul Dubai Austin Seattle Milan").split() if c not in HELDOUT_CITIES]
COUNTRIES = ("France Japan Brazil Kenya Canada Peru Norway India Egypt Spain Chile Poland Vietnam Ghana "
             "Mexico Sweden Greece Nepal Italy Chad").split()
CURRENCIES = "USD EUR GBP JPY CHF CAD AUD INR CNY SEK".split()
CONDITIONS = "sunny cloudy rainy windy snowy foggy clear".split()
PEOPLE = "anna bob carla dev elena femi gus hiro ines jon".split()
SUBJECTS = ["Meeting notes", "Lunch tomorrow", "Project update", "Weekend plans", "Invoice"]


def _p(t, d, enum=None):
    return {"type": t, "description": d, **({"enum": enum} if enum else {})}


def weather(rng, cities):
    city = rng.choice(cities)
    unit = rng.choice(["celsius", "fahrenheit"]) if rng.random() < 0.4 else None
    temp = rng.randint(-10, 38) if unit != "fahrenheit" else rng.randint(14, 100)
    cond = rng.choice(CONDITIONS)
    base = [f"What is the weather in {city}?", f"How is the weather in {city} right now?",
            f"Is it warm in {city} today?", f"Tell me the weather for {city}."]
    req = [b[:-1] + f" in {unit}?" for b in base] if unit else base
    args = {"city": city, "unit": unit} if unit else {"city": city}
    res = {"city": city, "temperature": temp, "unit": unit or "celsius", "condition": cond}
    return args, req, res, f"It is {temp} degrees {unit or 'celsius'} and {cond} in {city}."


def time(rng, cities):
    city = rng.choice(cities)
    t = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    req = [f"What time is it in {city}?", f"What is the local time in {city}?", f"Tell me the time in {city}."]
    return {"city": city}, req, {"city": city, "time": t}, f"The local time in {city} is {t}."


def currency(rng, cities):
    a, b = rng.sample(CURRENCIES, 2)
    amt = rng.choice([5, 10, 20, 25, 50, 75, 100, 200, 250, 500, 1000]) * rng.randint(1, 3)
    conv = max(1, round(amt * (0.5 + rng.random() * 1.5)))
    req = [f"How much is {amt} {a} in {b}?", f"Convert {amt} {a} to {b}.", f"What is {amt} {a} in {b}?"]
    return ({"amount": amt, "from_currency": a, "to_currency": b}, req,
            {"amount": amt, "from": a, "to": b, "result": conv}, f"{amt} {a} is about {conv} {b}.")


def stock(rng, cities):
    sym = "".join(chr(65 + rng.randint(0, 25)) for _ in range(rng.randint(3, 4)))
    p = rng.randint(5, 900)
    req = [f"What is the stock price of {sym}?", f"How much is {sym} trading at?", f"Check the price of {sym} stock."]
    return {"symbol": sym}, req, {"symbol": sym, "price": p, "currency": "USD"}, f"{sym} is trading at {p} USD."


def population(rng, cities):
    c = rng.choice(COUNTRIES)
    m = rng.randint(2, 300)
    req = [f"What is the population of {c}?", f"How many people live in {c}?"]
    return {"country": c}, req, {"country": c, "population_millions": m}, f"{c} has about {m} million people."


def timer(rng, cities):
    m = rng.randint(1, 90)
    label = rng.choice(["tea", "pasta", "laundry", "workout", "nap", "oven"])
    if rng.random() < 0.5:
        return ({"minutes": m, "label": label}, [f"Set a {m} minute timer for the {label}."],
                {"status": "started", "minutes": m}, f"Your {m} minute timer has started.")
    return ({"minutes": m}, [f"Set a timer for {m} minutes.", f"Start a {m} minute timer."],
            {"status": "started", "minutes": m}, f"Your {m} minute timer has started.")


WORDS = {"hello": ["bonjour", "hola", "hallo", "ciao"], "thank you": ["merci", "gracias", "danke", "grazie"],
         "good night": ["bonne nuit", "buenas noches", "gute Nacht", "buona notte"],
         "good morning": ["bonjour", "buenos dias", "guten Morgen", "buongiorno"]}
LANGS = ["French", "Spanish", "German", "Italian"]


def translate(rng, cities):
    text, i = rng.choice(list(WORDS)), rng.randrange(4)
    lang, out = LANGS[i], WORDS[text][i]
    req = [f'Translate "{text}" into {lang}.', f'How do you say "{text}" in {lang}?']
    return ({"text": text, "target_language": lang}, req, {"translation": out},
            f'In {lang}, "{text}" is "{out}".')


def email(rng, cities):
    to, subj = f"{rng.choice(PEOPLE)}@example.com", rng.choice(SUBJECTS)
    req = [f'Send an email to {to} with the subject "{subj}".', f'Email {to} about "{subj}".']
    return {"to": to, "subject": subj}, req, {"status": "sent", "to": to}, f'I sent the email "{subj}" to {to}.'


CATALOG = {
    "v1/get_weather": (weather, tool("get_weather", "Get the current weather in a city.", {
        "city": _p("string", "The city name"),
        "unit": _p("string", "Temperature unit", ["celsius", "fahrenheit"])}, ["city"])),
    "v1/get_time": (time, tool("get_time", "Get the current local time in a city.",
                               {"city": _p("string", "The city name")}, ["city"])),
    "v1/convert_currency": (currency, tool("convert_currency", "Convert an amount of money from one currency to another.", {
        "amount": _p("integer", "The amount to convert"),
        "from_currency": _p("string", "Currency code to convert from, like USD"),
        "to_currency": _p("string", "Currency code to convert to, like EUR")}, ["amount", "from_currency", "to_currency"])),
    "v1/get_stock_price": (stock, tool("get_stock_price", "Get the latest price of a stock by its ticker symbol.",
                                       {"symbol": _p("string", "The ticker symbol")}, ["symbol"])),
    "v1/get_population": (population, tool("get_population", "Get the population of a country in millions.",
                                           {"country": _p("string", "The country name")}, ["country"])),
    "v1/set_timer": (timer, tool("set_timer", "Start a countdown timer.", {
        "minutes": _p("integer", "Length of the timer in minutes"),
        "label": _p("string", "A short name for the timer")}, ["minutes"])),
    "v1/translate": (translate, tool("translate", "Translate a short text into another language.", {
        "text": _p("string", "The text to translate"),
        "target_language": _p("string", "The language to translate into")}, ["text", "target_language"])),
    "v1/send_email": (email, tool("send_email", "Send a short email.", {
        "to": _p("string", "The email address of the recipient"),
        "subject": _p("string", "The subject line")}, ["to", "subject"])),
}
