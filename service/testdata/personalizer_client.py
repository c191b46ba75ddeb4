"""A Personalizer client written with urllib from the v1.0 specification
(Rank 201, Reward 204, Activate 204, errors {"error": {"code", "message"}}),
run by TestPersonalizerSpecExamples: python3 personalizer_client.py ENDPOINT KEY.
With a third argument, multislot, it is a multi-slot client of the
v1.1-preview.3 specification instead (MultiSlot_Rank 201,
MultiSlotEvents_Reward and _Activate 204), run by
TestPersonalizerMultiSlotSpecExamples: the example of docs/personalizer.md."""
import json
import sys
import urllib.error
import urllib.request

endpoint, key = sys.argv[1], sys.argv[2]
V1, PREVIEW = "/personalizer/v1.0", "/personalizer/v1.1-preview.3"


def post(path, body=None):
    """POSTs to path, under V1 unless it starts with PREVIEW."""
    data = None if body is None else json.dumps(body).encode()
    base = "" if path.startswith(PREVIEW) else V1
    req = urllib.request.Request(endpoint + base + path, data=data, method="POST")
    req.add_header("Ocp-Apim-Subscription-Key", key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def multislot():
    status, res = post(PREVIEW + "/multislot/rank", {
        "contextFeatures": [{"weather": "rainy"}, {"device": {"os": "android"}}],
        "actions": [{"id": "sports", "features": [{"topic": "sports"}]},
                    {"id": "politics", "features": [{"topic": "politics"}]},
                    {"id": "recipes", "features": [{"topic": "recipes"}]}],
        "slots": [{"id": "hero", "features": [{"size": "large"}], "baselineAction": "politics"},
                  {"id": "sidebar", "features": [{"size": "small"}], "baselineAction": "recipes",
                   "excludedActions": ["sports"]}],
        "deferActivation": True})
    assert status == 201, (status, res)
    chosen = [s["rewardActionId"] for s in res["slots"]]
    assert [s["id"] for s in res["slots"]] == ["hero", "sidebar"] and len(set(chosen)) == 2, res
    assert chosen[1] != "sports", res
    event = res["eventId"]  # drawn by the service: the request has none
    assert post(PREVIEW + "/multislot/events/%s/activate" % event) == (204, None)
    assert post(PREVIEW + "/multislot/events/%s/reward" % event,
                {"reward": [{"slotId": "hero", "value": 1}, {"slotId": "sidebar", "value": 0}]}) == (204, None)
    status, err = post(PREVIEW + "/multislot/events/%s/reward" % event, {"reward": [{"slotId": "footer", "value": 1}]})
    assert status == 400 and err["error"]["code"] == "BadRequest" and "reward[0].slotId" in err["error"]["message"], (status, err)
    print("multi-slot rank, activate, reward and a bad reward answered as the spec says; chose", chosen)


if len(sys.argv) > 3 and sys.argv[3] == "multislot":
    multislot()
    sys.exit(0)

rank = {
    "contextFeatures": [{"timeOfDay": "Evening"}, {"device": {"os": "android"}}],
    "actions": [
        {"id": "NewsArticle", "features": [{"type": "News"}]},
        {"id": "SportsArticle", "features": [{"type": "Sports"}]},
        {"id": "EntertainmentArticle", "features": [{"type": "Entertainment"}]},
    ],
    "excludedActions": ["NewsArticle"],
    "deferActivation": True,
}
status, res = post("/rank", rank)
assert status == 201, (status, res)
assert res["rewardActionId"] != "NewsArticle", res
probs = {a["id"]: a["probability"] for a in res["ranking"]}
assert probs["NewsArticle"] == 0 and abs(sum(probs.values()) - 1) < 1e-12, res
event = res["eventId"]  # drawn by the service: the request has none
assert post("/events/%s/activate" % event) == (204, None)
assert post("/events/%s/reward" % event, {"value": 0.5}) == (204, None)
status, err = post("/events/%s/reward" % event, {"value": 2})
assert status == 400 and err["error"]["code"] == "BadRequest", (status, err)
print("rank, activate, reward and a bad reward answered as the spec says; chose", res["rewardActionId"])
