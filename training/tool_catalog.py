"""Tools over varied JSON schemas (enums, optional parameters, arrays, nested objects) with, for
each, a sampler of arguments, user requests that state them (training and held-out phrasings),
a scripted result and the final answer that reads it."""
HELDOUT_CITIES = "Quito Tallinn Accra Hanoi".split()
# Run 6: 16 cities were too few. Run 5 wrote training cities in place of the held-out ones it
# was asked for (plan_route from "Accra" to "Hanoi" became ["Sydney","Cairo"]), so the training
# requests draw from many more names, short and long, to teach copying the name it is given.
CITIES = [c for c in (
    "Paris Oslo Tokyo Rome Berlin Madrid Lima Cairo Seoul Dublin Vienna Lisbon Nairobi Toronto Sydney Prague "
    "Bogota Riga Vilnius Minsk Kyiv Sofia Zagreb Skopje Tirana Tbilisi Baku Yerevan Almaty Tashkent Kabul "
    "Dhaka Colombo Kathmandu Lahore Karachi Jaipur Chennai Pune Hue Danang Jakarta Surabaya Cebu Davao "
    "Perth Hobart Darwin Auckland Suva Apia Lagos Abuja Dakar Bamako Niamey Kampala Kigali Lusaka Harare "
    "Maputo Luanda Windhoek Durban Tunis Algiers Rabat Fez Tripoli Khartoum Asmara Djibouti Muscat Doha "
    "Amman Beirut Damascus Tehran Shiraz Ankara Izmir Bergen Malmo Aarhus Turku Tartu Gdansk Krakow Brno "
    "Graz Lyon Nantes Porto Seville Bilbao Naples Turin Genoa Bruges Ghent Utrecht Leeds Cork Belfast "
    "Reykjavik Halifax Quebec Calgary Ottawa Regina Tulsa Omaha Reno Tucson Fresno Miami Havana Kingston "
    "Panama Managua Caracas Cusco Arequipa Montevideo Asuncion Rosario Recife Belem Manaus Cordoba").split()
    if c not in HELDOUT_CITIES]
LANGS = ["French", "German", "Spanish", "Japanese", "Italian"]
PEOPLE = "ana ben carla dan eva farid gus hiro ines jon".split()


def _s(t, desc=None, enum=None):
    d = {"type": t}
    if desc:
        d["description"] = desc
    if enum:
        d["enum"] = enum
    return d


def _obj(props, required):
    return {"type": "object", "properties": props, "required": required}


def tool(name, desc, props, required):
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": _obj(props, required)}}


def weather(rng, cities):
    city = rng.choice(cities)
    args = {"city": city}
    unit = rng.choice([None, "celsius", "fahrenheit"])
    if unit:
        args["unit"] = unit
    req = [f"What's the weather in {city}?", f"How warm is it in {city} right now?", f"Weather for {city}, please."]
    if unit:
        req = [f"What's the weather in {city} in {unit}?", f"Tell me the temperature in {city} in {unit}."]
    temp = rng.randint(-5, 35)
    cond = rng.choice(["sunny", "cloudy", "rainy", "windy", "snowy"])
    res = {"city": city, "temperature": temp, "condition": cond}
    ans = f"It is {temp} degrees and {cond} in {city}."
    return args, req, res, ans


def flights(rng, cities):
    o, d = rng.sample(cities, 2)
    day = rng.randint(1, 28)
    args = {"origin": o, "destination": d, "date": f"2026-12-{day:02d}"}
    p = rng.choice([None, 1, 2, 3, 4])
    cabin = rng.choice([None, "economy", "business"])
    if p:
        args["passengers"] = p
    if cabin:
        args["cabin"] = cabin
    extra = (f" for {p} passengers" if p else "") + (f" in {cabin}" if cabin else "")
    req = [f"Find flights from {o} to {d} on 2026-12-{day:02d}{extra}.",
           f"Search flights {o} to {d}, date 2026-12-{day:02d}{extra}."]
    price = rng.randint(80, 900)
    res = {"flights": [{"number": f"MX{rng.randint(100, 999)}", "price": price}]}
    ans = f"I found a flight from {o} to {d} for {price} dollars."
    return args, req, res, ans


def event(rng, cities):
    who = rng.sample(PEOPLE, rng.randint(1, 3))
    title = rng.choice(["Team sync", "Lunch", "Project review", "Planning", "Demo"])
    day, hour = rng.randint(1, 28), rng.randint(8, 17)
    args = {"title": title, "attendees": who, "start": {"date": f"2026-12-{day:02d}", "time": f"{hour:02d}:00"}}
    dur = rng.choice([None, 30, 60, 90])
    if dur:
        args["duration_minutes"] = dur
    names = " and ".join(who)
    req = [f"Schedule '{title}' with {names} on 2026-12-{day:02d} at {hour:02d}:00" + (f" for {dur} minutes." if dur else "."),
           f"Create an event called {title} on 2026-12-{day:02d} at {hour:02d}:00 with {names}" + (f", {dur} minutes long." if dur else ".")]
    res = {"ok": True, "event_id": rng.randint(1000, 9999)}
    ans = f"The event {title} is scheduled on 2026-12-{day:02d} at {hour:02d}:00."
    return args, req, res, ans


def email(rng, cities):
    to = [f"{p}@example.com" for p in rng.sample(PEOPLE, rng.randint(1, 2))]
    subj = rng.choice(["Report", "Meeting", "Hello", "Invoice", "Trip"])
    body = rng.choice(["See you soon.", "The report is ready.", "Thanks for your help.", "Please call me."])
    args = {"to": to, "subject": subj, "body": body}
    pr = rng.choice([None, "low", "high"])
    if pr:
        args["priority"] = pr
    req = [f"Email {' and '.join(to)} with subject {subj} saying: {body}" + (f" Priority {pr}." if pr else ""),
           f"Send an email to {' and '.join(to)}, subject {subj}, text: {body}" + (f" Mark it {pr} priority." if pr else "")]
    res = {"sent": True}
    ans = f"The email with subject {subj} was sent."
    return args, req, res, ans


def currency(rng, cities):
    amt = rng.randint(5, 900)
    f, t = rng.sample(["USD", "EUR", "GBP", "JPY", "CHF"], 2)
    args = {"amount": amt, "from": f, "to": t}
    req = [f"Convert {amt} {f} to {t}.", f"How much is {amt} {f} in {t}?"]
    val = rng.randint(5, 900)
    res = {"amount": val, "currency": t}
    ans = f"{amt} {f} is {val} {t}."
    return args, req, res, ans


def pizza(rng, cities):
    size = rng.choice(["small", "medium", "large"])
    tops = rng.sample(["cheese", "ham", "mushrooms", "olives", "peppers"], rng.randint(1, 3))
    deliv = rng.random() < 0.5
    args = {"size": size, "toppings": tops, "delivery": deliv}
    how = "delivered" if deliv else "for pickup"
    req = [f"Order a {size} pizza with {', '.join(tops)}, {how}.", f"I want a {size} pizza, toppings {' and '.join(tops)}, {how}."]
    mins = rng.randint(15, 50)
    res = {"order_id": rng.randint(100, 999), "ready_in_minutes": mins}
    ans = f"Your {size} pizza is ordered and will be ready in {mins} minutes."
    return args, req, res, ans


def route(rng, cities):
    stops = rng.sample(cities, rng.randint(2, 3))
    mode = rng.choice(["driving", "walking", "cycling"])
    args = {"stops": stops, "mode": mode}
    req = [f"Plan a {mode} route through {', '.join(stops)}.", f"Route from {' to '.join(stops)} by {mode}, please."]
    km = rng.randint(3, 900)
    res = {"distance_km": km}
    ans = f"The {mode} route is {km} km long."
    return args, req, res, ans


def table(rng, cities):
    name = rng.choice(["Luigi's", "Sakura", "The Oak", "Blue Fish"])
    size, hour = rng.randint(1, 8), rng.randint(17, 21)
    args = {"restaurant": name, "party_size": size, "time": f"{hour}:00"}
    if rng.random() < 0.5:
        out = rng.random() < 0.5
        args["preferences"] = {"outdoor": out}
        extra = " outside" if out else " inside"
    else:
        extra = ""
    req = [f"Book a table at {name} for {size} at {hour}:00{extra}.", f"Reserve {name} for {size} people at {hour}:00{extra}."]
    res = {"confirmed": True}
    ans = f"Your table at {name} for {size} at {hour}:00 is booked."
    return args, req, res, ans


def stock(rng, cities):
    sym = rng.choice(["AAPL", "MSFT", "NVDA", "TSLA", "AMZN"])
    args = {"symbol": sym}
    req = [f"What is the stock price of {sym}?", f"Price of {sym} today?"]
    p = rng.randint(20, 900)
    res = {"symbol": sym, "price": p}
    ans = f"{sym} is trading at {p} dollars."
    return args, req, res, ans


def translate(rng, cities):
    text = rng.choice(["good morning", "thank you", "where is the station", "I like tea"])
    lang = rng.choice(LANGS)
    args = {"text": text, "target_language": lang}
    req = [f"Translate '{text}' into {lang}.", f"How do you say '{text}' in {lang}?"]
    res = {"translation": f"[{lang}] {text}"}
    ans = f"In {lang}: [{lang}] {text}"
    return args, req, res, ans


def timer(rng, cities):
    m = rng.randint(1, 90)
    args = {"minutes": m}
    label = rng.choice([None, "tea", "pasta", "break"])
    if label:
        args["label"] = label
    req = [f"Set a timer for {m} minutes" + (f" called {label}." if label else "."),
           f"Start a {m} minute timer" + (f" for {label}." if label else ".")]
    res = {"ok": True}
    ans = f"A timer for {m} minutes is set."
    return args, req, res, ans


def docs(rng, cities):
    q = rng.choice(["kv cache", "tool calls", "sparse attention", "batching"])
    args = {"query": q}
    n = rng.choice([None, 3, 5])
    if n:
        args["max_results"] = n
    year = rng.choice([None, 2024, 2025, 2026])
    if year:
        args["filters"] = {"year": year}
    req = [f"Search the docs for {q}" + (f", top {n}" if n else "") + (f", from {year}." if year else "."),
           f"Look up {q} in the documentation" + (f" with {n} results" if n else "") + (f" for year {year}." if year else ".")]
    res = {"results": [{"title": f"{q.capitalize()} guide"}]}
    ans = f"The docs have a page called {q.capitalize()} guide."
    return args, req, res, ans


CATALOG = {
    "get_weather": (weather, tool("get_weather", "Current weather for a city.", {
        "city": _s("string", "City name"), "unit": _s("string", None, ["celsius", "fahrenheit"])}, ["city"])),
    "search_flights": (flights, tool("search_flights", "Search flights between two cities.", {
        "origin": _s("string"), "destination": _s("string"), "date": _s("string", "YYYY-MM-DD"),
        "passengers": _s("integer"), "cabin": _s("string", None, ["economy", "business", "first"])},
        ["origin", "destination", "date"])),
    "create_event": (event, tool("create_event", "Create a calendar event.", {
        "title": _s("string"), "attendees": {"type": "array", "items": {"type": "string"}},
        "start": _obj({"date": _s("string"), "time": _s("string")}, ["date", "time"]),
        "duration_minutes": _s("integer")}, ["title", "attendees", "start"])),
    "send_email": (email, tool("send_email", "Send an email.", {
        "to": {"type": "array", "items": {"type": "string"}}, "subject": _s("string"), "body": _s("string"),
        "priority": _s("string", None, ["low", "normal", "high"])}, ["to", "subject", "body"])),
    "convert_currency": (currency, tool("convert_currency", "Convert money between currencies.", {
        "amount": _s("number"), "from": _s("string"), "to": _s("string")}, ["amount", "from", "to"])),
    "order_pizza": (pizza, tool("order_pizza", "Order a pizza.", {
        "size": _s("string", None, ["small", "medium", "large"]),
        "toppings": {"type": "array", "items": _s("string", None, ["cheese", "ham", "mushrooms", "olives", "peppers"])},
        "delivery": _s("boolean")}, ["size", "toppings", "delivery"])),
    "plan_route": (route, tool("plan_route", "Plan a route through stops.", {
        "stops": {"type": "array", "items": {"type": "string"}},
        "mode": _s("string", None, ["driving", "walking", "cycling"])}, ["stops", "mode"])),
    "book_table": (table, tool("book_table", "Book a restaurant table.", {
        "restaurant": _s("string"), "party_size": _s("integer"), "time": _s("string"),
        "preferences": _obj({"outdoor": _s("boolean")}, [])}, ["restaurant", "party_size", "time"])),
    "get_stock_price": (stock, tool("get_stock_price", "Latest price of a stock.", {"symbol": _s("string")}, ["symbol"])),
    "translate": (translate, tool("translate", "Translate text.", {
        "text": _s("string"), "target_language": _s("string", None, LANGS)}, ["text", "target_language"])),
    "set_timer": (timer, tool("set_timer", "Start a timer.", {
        "minutes": _s("integer"), "label": _s("string")}, ["minutes"])),
    "search_docs": (docs, tool("search_docs", "Search the documentation.", {
        "query": _s("string"), "max_results": _s("integer"), "filters": _obj({"year": _s("integer")}, [])}, ["query"])),
}
