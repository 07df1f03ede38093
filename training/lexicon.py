"""Words the word-problem generators draw on: names, countable things, measured quantities."""

NAMES = (
    "Tom Anna Ben Maria Sam Lena Omar Priya Jack Mia Leo Sara Noah Emma Ali Yuki Carlos Zoe Ivan Nora "
    "Kofi Lucy Ravi Hana Paul Eva Max Ines Tariq Julia Finn Aisha Marco Chloe Dev Olga Hugo Amara Liam Rosa"
).split()
# Names only the held-out generator uses.
HELDOUT_NAMES = "Beatrix Kwame Svetlana Desmond Ingrid Matteo Farah Oskar Tamsin Rafael".split()

# (plural, container) pairs of countable things.
THINGS = [
    ("apples", "baskets"), ("marbles", "bags"), ("stickers", "sheets"), ("books", "shelves"),
    ("coins", "jars"), ("pencils", "boxes"), ("cookies", "plates"), ("eggs", "cartons"),
    ("shells", "buckets"), ("cards", "packs"), ("flowers", "vases"), ("candles", "boxes"),
    ("stamps", "albums"), ("beads", "strings"), ("toy cars", "crates"), ("oranges", "bags"),
    ("balloons", "bunches"), ("cupcakes", "trays"), ("buttons", "tins"), ("crayons", "packs"),
    ("bottles", "crates"), ("chairs", "rows"), ("tickets", "books"), ("nails", "boxes"),
]
HELDOUT_THINGS = [("pebbles", "pouches"), ("lemons", "sacks"), ("keys", "rings"), ("plums", "bowls")]

# (unit, verb phrase, question) for measured quantities that add up.
MEASURES = [
    ("km", "walks", "How many km does {P} walk in total?"),
    ("km", "cycles", "How far does {P} cycle altogether, in km?"),
    ("pages", "reads", "How many pages does {P} read in total?"),
    ("minutes", "practises", "How many minutes does {P} practise in total?"),
    ("liters of water", "drinks", "How many liters of water does {P} drink in total?"),
    ("laps", "swims", "How many laps does {P} swim in total?"),
    ("kg of rice", "sells", "How many kg of rice does {P} sell in total?"),
]
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
CURRENCY = ["dollars", "euros", "pounds"]
