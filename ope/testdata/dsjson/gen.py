#!/usr/bin/env python3
"""An independent writer of decision service logs (dsjson) and of their
IPS and SNIPS, for ope's tests (TestDSJSONAgainstIndependentGenerator).

The records follow Vowpal Wabbit's DSJSON format as its wiki and its
parser's tests write them: _label_cost (the chosen action's cost, the
negated reward), _label_probability, _label_Action (1-based id),
_labelIndex (0-based index into c._multi), a (the ids ranked, the chosen
first), p (their probabilities, in a's order), c (shared namespaces and
_multi, one object of features per action), EventId, Timestamp; some
decisions have no cost yet (skipped) and some are _skipLearn. A second
file has two slots per record (_outcomes with _a, 0-based, and _p).

The target "linear" is the softmax (temperature 0.5) of <theta, x_a>,
x_a the features of c's shared namespaces plus action a's, hashed as
package featurehash documents (FNV-1a 64 of namespace, NUL, name, modulo
2^4): written here from that description, not from the Go code.

Run: python3 gen.py (writes single.dsjson, slots.dsjson, theta.json,
expected.json beside itself). Seeded: the same files every run.
"""
import json, math, os, random

BITS = 4
K = 4
HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261127)


def fnv1a(data: bytes) -> int:
    x = 14695981039346656037
    for b in data:
        x ^= b
        x = (x * 1099511628211) % (1 << 64)
    return x


def index(ns, name):
    return fnv1a(ns.encode() + b"\x00" + name.encode()) & ((1 << BITS) - 1)


def features(obj, vec, ns=None, prefix=""):
    """Adds obj's features: top level (ns None) objects are namespaces."""
    for k in sorted(obj):
        if k.startswith("_"):
            continue
        v = obj[k]
        if isinstance(v, dict):
            if ns is None:
                features(v, vec, k, "")
            else:
                features(v, vec, ns, prefix + k + ".")
            continue
        space = "" if ns is None else ns
        name = prefix + k
        if isinstance(v, bool):
            if v:
                vec[index(space, name)] += 1
        elif isinstance(v, str):
            vec[index(space, name + "=" + v)] += 1
        elif isinstance(v, (int, float)):
            vec[index(space, name)] += v
        elif isinstance(v, list):
            for i, x in enumerate(v):
                vec[index(space, "%s[%d]" % (name, i))] += x


theta = [rng.uniform(-1, 1) for _ in range(1 << BITS)]


def linear_probs(c, slot=None):
    shared = [0.0] * (1 << BITS)
    features(c, shared)
    if slot is not None:
        features(slot, shared)
    scores = []
    for m in c["_multi"]:
        x = list(shared)
        features(m, x)
        scores.append(sum(t * v for t, v in zip(theta, x)))
    best = max(scores)
    e = [math.exp((s - best) / 0.5) for s in scores]
    return [v / sum(e) for v in e]


def context():
    return {
        "User": {"tier": rng.choice(["gold", "free", "pro"]), "age": rng.randint(18, 70), "vip": rng.random() < 0.3},
        "Geo": {"country": rng.choice(["NO", "FR", "JP"]), "loc": {"city": rng.choice(["a", "b"])}},
        "hour": rng.randint(0, 23),
        "_synthetic": False,
        "_multi": [{"Item": {"id": "item%d" % i, "price": round(rng.uniform(1, 50), 2)}, "_tag": "t%d" % i} for i in range(K)],
    }


def logging_probs():
    w = [rng.uniform(0.2, 1) for _ in range(K)]
    return [x / sum(w) for x in w]


def draw(p):
    u, a = rng.random(), 0
    while a < len(p) - 1 and u > p[a]:
        u -= p[a]
        a += 1
    return a


sums = {t: {"wr": 0.0, "w": 0.0, "n": 0} for t in ("uniform", "arm:2", "logging", "linear")}
slot_sums = {t: {"wr": 0.0, "w": 0.0, "n": 0} for t in ("uniform", "linear")}


def add(s, pi, pscore, r):
    w = pi / pscore
    s["wr"] += w * r
    s["w"] += w
    s["n"] += 1


with open(os.path.join(HERE, "single.dsjson"), "w") as f:
    for i in range(800):
        c = context()
        p = logging_probs()
        a = draw(p)
        rest = [j for j in range(K) if j != a]
        rng.shuffle(rest)
        ranked = [a] + rest
        rec = {
            "_label_probability": p[a],
            "_label_Action": a + 1,
            "_labelIndex": a,
            "Timestamp": "2026-11-27T09:%02d:%02d.0000000Z" % (i // 60 % 60, i % 60),
            "Version": "1",
            "EventId": "ev%05d" % i,
            "a": [j + 1 for j in ranked],
            "c": c,
            "p": [p[j] for j in ranked],
            "VWState": {"m": "N/A"},
        }
        rewarded = True
        if i % 17 == 5:
            rewarded = False  # no outcome yet: no _label_cost
        elif i % 23 == 7:
            rec["_skipLearn"] = True
            rec["_label_cost"] = -1.0
            rewarded = False
        else:
            r = float(rng.random() < 0.2 + 0.15 * a)
            rec["_label_cost"] = -r
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        if rewarded:
            r = -rec["_label_cost"]
            add(sums["uniform"], 1 / K, p[a], r)
            add(sums["arm:2"], 1.0 if a == 2 else 0.0, p[a], r)
            add(sums["logging"], p[a], p[a], r)
            add(sums["linear"], linear_probs(c)[a], p[a], r)

with open(os.path.join(HERE, "slots.dsjson"), "w") as f:
    for i in range(400):
        c = context()
        c["_slots"] = [{"Slot": {"pos": "top"}}, {"Slot": {"pos": "side"}}]
        outcomes = []
        for s in range(2):
            p = logging_probs()
            a = draw(p)
            rest = [j for j in range(K) if j != a]
            o = {"_id": "slot%d" % s, "_a": [a] + rest, "_p": [p[a]] + [p[j] for j in rest]}
            if i % 11 != 3:
                o["_label_cost"] = -float(rng.random() < 0.3)
            outcomes.append(o)
            if "_label_cost" in o:
                r = -o["_label_cost"]
                add(slot_sums["uniform"], 1 / K, p[a], r)
                add(slot_sums["linear"], linear_probs(c, c["_slots"][s])[a], p[a], r)
        rec = {"Version": "1", "EventId": "s%05d" % i, "c": c, "_outcomes": outcomes}
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")

with open(os.path.join(HERE, "theta.json"), "w") as f:
    json.dump([theta], f)


def est(s):
    return {"ips": s["wr"] / s["n"], "snips": s["wr"] / s["w"], "events": s["n"]}


with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump({"single": {t: est(s) for t, s in sums.items()}, "slots": {t: est(s) for t, s in slot_sums.items()}}, f, indent=1)
