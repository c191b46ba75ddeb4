"""A Personalizer client written with urllib from the v1.0 specification
(Rank 201, Reward 204, Activate 204, errors {"error": {"code", "message"}}),
run by TestPersonalizerSpecExamples: python3 personalizer_client.py ENDPOINT KEY."""
import json
import sys
import urllib.error
import urllib.request

endpoint, key = sys.argv[1], sys.argv[2]


def post(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(endpoint + "/personalizer/v1.0" + path, data=data, method="POST")
    req.add_header("Ocp-Apim-Subscription-Key", key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


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
