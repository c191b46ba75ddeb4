import json, urllib.request, random, sys
base = sys.argv[1]
def call(method, path, body=None, key=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    if body is not None: req.add_header("Content-Type", "application/json")
    if key: req.add_header("Ocp-Apim-Subscription-Key", key)
    try:
        with urllib.request.urlopen(req) as r: return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()
print(call("POST", "/v1/experiments", {"id": "pz", "surface": "personalizer", "privacy": {"rho": 1}}))
rnd = random.Random(7)
lists = []
for L in range(2):
    acts = []
    for k in range(6):
        f = {"title": "article %d-%d" % (L, k), "topic": "t%d" % (k % 3)}
        for j in range(8): f["f%d" % j] = rnd.randint(0, 999) / 1000
        acts.append({"id": "a%d" % k, "features": [{"article": f}]})
    lists.append(acts)
for i in range(80):
    acts = lists[i % 2]
    body = {"contextFeatures": [{"visitor": {"segment": "s%d" % (i % 4), "device": ["mobile", "desktop"][i % 2]}}, {"time": {"hour": i % 24}}],
            "actions": acts, "eventId": "ev%d" % i}
    if i % 5 == 0: body["excludedActions"] = ["a1"]
    if i % 7 == 0: body["deferActivation"] = True
    # vary the whitespace of the request: the stored context is compacted
    raw = json.dumps(body, indent=(2 if i % 3 == 0 else None))
    req = urllib.request.Request(base + "/personalizer/v1.0/rank", method="POST", data=raw.encode())
    req.add_header("Content-Type", "application/json"); req.add_header("Ocp-Apim-Subscription-Key", "pz")
    with urllib.request.urlopen(req) as r: res = json.loads(r.read())
    if i % 14 == 0: call("POST", "/personalizer/v1.0/events/ev%d/activate" % i, None, "pz")
    if i % 4 != 3:
        call("POST", "/personalizer/v1.0/events/ev%d/reward" % i, {"value": rnd.choice([0, 1, 0.5])}, "pz")
print("done")
