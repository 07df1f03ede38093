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

# Run 5: more names and things for the training generator alone, so that an unseen name or
# thing reads as one (none of them is held out; the held-out lists above stay as they were).
NAMES_WIDE = NAMES + (
    "Adele Bruno Camila Dmitri Esther Felix Greta Hamid Isla Jonas Keiko Lars Malik Nadia Otto Petra "
    "Quinn Rahul Sofia Theo Ursula Viktor Wanda Xavier Yara Zane Amir Bianca Cyrus Daria Elif Goran "
    "Helga Imani Joel Kira Luca Mateus Nico Odette Pablo Rina Stefan Tomas Uma Vera Wes Ximena Yusuf Zara "
    "Abena Bjorn Chidi Dagny Emeka Fatima Gideon Hiro Ilse Jamal Kenji Leila Mina Nils Oren Pia Rohan Selin"
).split()
THINGS_WIDE = THINGS + [
    ("peaches", "baskets"), ("grapes", "bags"), ("pears", "crates"), ("carrots", "bags"), ("potatoes", "bins"),
    ("cherries", "cups"), ("walnuts", "jars"), ("muffins", "trays"), ("donuts", "boxes"), ("sandwiches", "plates"),
    ("socks", "drawers"), ("shirts", "piles"), ("hats", "shelves"), ("gloves", "bins"), ("toys", "chests"),
    ("puzzles", "stacks"), ("dolls", "shelves"), ("blocks", "tubs"), ("rocks", "buckets"), ("feathers", "cans"),
    ("paper clips", "cups"), ("erasers", "cases"), ("markers", "sets"), ("notebooks", "stacks"), ("photos", "albums"),
    ("seeds", "packets"), ("tomatoes", "baskets"), ("mangoes", "crates"), ("spoons", "drawers"), ("cups", "shelves"),
]
