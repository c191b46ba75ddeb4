"""A Personalizer multi-slot client written with urllib from the
v1.1-preview.3 specification (MultiSlot_Rank 201, MultiSlotEvents_Reward
and _Activate 204, errors {"error": {"code", "message"}}), run by
TestPersonalizerMultiSlotSpecExamples: python3 personalizer_multislot.py ENDPOINT KEY.
The example of docs/personalizer.md (multi-slot)."""
import json
import sys
import urllib.error
import urllib.request

endpoint, key = sys.argv[1], sys.argv[2]


def post(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(endpoint + "/personalizer/v1.1-preview.3" + path, data=data, method="POST")
    req.add_header("Ocp-Apim-Subscription-Key", key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


status, res = post("/multislot/rank", {
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
assert post("/multislot/events/%s/activate" % event) == (204, None)
assert post("/multislot/events/%s/reward" % event,
            {"reward": [{"slotId": "hero", "value": 1}, {"slotId": "sidebar", "value": 0}]}) == (204, None)
status, err = post("/multislot/events/%s/reward" % event, {"reward": [{"slotId": "footer", "value": 1}]})
assert status == 400 and err["error"]["code"] == "BadRequest" and "reward[0].slotId" in err["error"]["message"], (status, err)
print("multi-slot rank, activate, reward and a bad reward answered as the spec says; chose", chosen)
