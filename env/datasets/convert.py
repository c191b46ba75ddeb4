#!/usr/bin/env python3
"""Rebuild the shipped datasets from the Debian packages they come from.

    apt-get install python3-sklearn r-cran-mlbench
    python3 env/datasets/convert.py

(python3 env/datasets/convert.py --bounds-only recomputes only the
declared ranges of datasets.json from the shipped files.)

Each dataset becomes NAME.csv.gz: a header row, the features as they are in
the source (no scaling), and the class label last in a column "class".
datasets.json records, for each, its rows, classes, source, licence and the
declared range of every feature: the attribute's minimum and maximum over
the shipped rows, rounded outward to two significant digits in decimal
arithmetic (pixel and grid counts: their full scale). dpbandit scales
contexts by these fixed ranges only (env/dataset.go), never by
statistics of a run. They come from the
rows themselves, which is harmless for these public benchmarks under seed
001's model (contexts public, rewards private), but not a range fixed
before the data were seen: for data of your own, declare the ranges
(csv:PATH,lo=,hi=,ranges=).
"""
import csv, gzip, io, json, os, subprocess, sys
from decimal import Decimal, ROUND_CEILING, ROUND_FLOOR

SK = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
HERE = os.path.dirname(os.path.abspath(__file__))
UCI = "UCI Machine Learning Repository, CC BY 4.0 (https://archive.ics.uci.edu)"


def outward(lo, hi):
    """Round [lo, hi] outward to two significant digits, in decimal
    arithmetic on the values as shipped (their text): in binary floating
    point 4.3 / 0.1 is 42.99999999999999, which floored to 4.2 (iris's
    sepal_length, issue #50). env/dataset_test.go checks every shipped
    range against the rule computed exactly."""
    def r(x, up):
        x = Decimal(x)
        if x == 0:
            return 0.0
        q = Decimal(1).scaleb(x.adjusted() - 1)  # the second significant digit's unit
        v = (x / q).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR) * q
        return float(v)
    return [r(lo, False), r(hi, True)]


def column_bounds(rows, full):
    """The declared range of each column of rows (the shipped text of the
    features): full when given, else outward of its minimum and maximum."""
    return [full if full else outward(min(c, key=Decimal), max(c, key=Decimal)) for c in zip(*rows)]


def sklearn_csv(fname, names, classes):
    """sklearn's files: a first row n,d,class names..., then d features and
    the class index per row."""
    op = gzip.open if fname.endswith(".gz") else open
    with op(os.path.join(SK, fname), "rt") as f:
        rows = list(csv.reader(f))
    if classes is None:
        classes = rows[0][2:]
        rows = rows[1:]
    X = [[float(v) for v in r[:-1]] for r in rows]
    y = [classes[int(float(r[-1]))] for r in rows]
    return (names or [f"x{j}" for j in range(len(X[0]))]), X, y


def letters():
    out = subprocess.run(["Rscript", "-e",
        'load("/usr/lib/R/site-library/mlbench/data/LetterRecognition.rda");'
        'write.csv(LetterRecognition, stdout(), row.names=FALSE, quote=FALSE)'],
        check=True, capture_output=True, text=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    head, rows = rows[0], rows[1:]
    return head[1:], [[float(v) for v in r[1:]] for r in rows], [r[0] for r in rows]


IRIS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
WINE = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium", "total_phenols",
        "flavanoids", "nonflavanoid_phenols", "proanthocyanins", "color_intensity", "hue",
        "od280_od315", "proline"]
BC = [f"{s}_{m}" for m in ("mean", "se", "worst") for s in ("radius", "texture", "perimeter",
      "area", "smoothness", "compactness", "concavity", "concave_points", "symmetry", "fractal_dimension")]

SETS = [
    ("iris", lambda: sklearn_csv("iris.csv", IRIS, None), None,
     "Fisher (1936), UCI dataset 53; python3-sklearn: sklearn/datasets/data/iris.csv"),
    ("wine", lambda: sklearn_csv("wine_data.csv", WINE, None), None,
     "Aeberhard and Forina (1991), UCI dataset 109; python3-sklearn: sklearn/datasets/data/wine_data.csv"),
    ("breast-cancer", lambda: sklearn_csv("breast_cancer.csv", BC, None), None,
     "Wolberg, Street and Mangasarian (1995), Breast Cancer Wisconsin (Diagnostic), UCI dataset 17; python3-sklearn: sklearn/datasets/data/breast_cancer.csv"),
    ("digits", lambda: sklearn_csv("digits.csv.gz", [f"p{j}" for j in range(64)], [str(i) for i in range(10)]), [0, 16],
     "Alpaydin and Kaynak (1998), Optical Recognition of Handwritten Digits (test part, 8x8 counts 0-16), UCI dataset 80; python3-sklearn: sklearn/datasets/data/digits.csv.gz"),
    ("letter", letters, [0, 15],
     "Frey and Slate (1991), Letter Recognition, UCI dataset 59; r-cran-mlbench: mlbench/data/LetterRecognition.rda"),
]

def shipped_rows(name):
    """The features of a shipped NAME.csv.gz, as text, row by row."""
    with gzip.open(os.path.join(HERE, name + ".csv.gz"), "rt", newline="") as f:
        return [r[:-1] for r in list(csv.reader(f))[1:]]


def write_meta(meta):
    with open(os.path.join(HERE, "datasets.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if sys.argv[1:] == ["--bounds-only"]:
    # Recompute the declared ranges from the shipped files alone (no
    # Debian packages needed): what a full rebuild writes, the rows being
    # the same.
    with open(os.path.join(HERE, "datasets.json")) as f:
        meta = json.load(f)
    full = {name: fs for name, _, fs, _ in SETS}
    for m in meta:
        m["bounds"] = column_bounds(shipped_rows(m["name"]), full[m["name"]])
    write_meta(meta)
    sys.exit(0)

meta = []
for name, load, full, source in SETS:
    names, X, y = load()
    text = [[f"{v:g}" for v in x] for x in X]
    with gzip.GzipFile(os.path.join(HERE, name + ".csv.gz"), "wb", mtime=0) as g:
        w = io.TextIOWrapper(g, newline="")
        c = csv.writer(w, lineterminator="\n")
        c.writerow(names + ["class"])
        for x, lab in zip(text, y):
            c.writerow(x + [lab])
        w.flush()
    meta.append({"name": name, "file": name + ".csv.gz", "rows": len(X), "features": len(names),
                 "classes": sorted(set(y)), "bounds": column_bounds(text, full), "source": source, "licence": UCI})
write_meta(meta)
