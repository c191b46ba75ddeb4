// The stock JavaScript SDK of Azure Personalizer
// (@azure/cognitiveservices-personalizer, v1.0 API) against the service,
// configured with nothing but an endpoint and a key:
//   node personalizer_sdk.js ENDPOINT KEY
// with the SDK installed (npm install @azure/cognitiveservices-personalizer
// @azure/ms-rest-js) in a folder named by NODE_PATH.
const { PersonalizerClient } = require("@azure/cognitiveservices-personalizer");
const { ApiKeyCredentials } = require("@azure/ms-rest-js");

async function main() {
  const [endpoint, key] = process.argv.slice(2);
  const creds = new ApiKeyCredentials({ inHeader: { "Ocp-Apim-Subscription-Key": key } });
  const client = new PersonalizerClient(creds, endpoint);
  // The spec's example (examples/Rank.json).
  const req = {
    contextFeatures: [{ timeOfDay: "Morning" }],
    actions: [
      { id: "NewsArticle", features: [{ type: "News" }] },
      { id: "SportsArticle", features: [{ type: "Sports" }] },
      { id: "EntertainmentArticle", features: [{ type: "Entertainment" }] },
    ],
    excludedActions: ["SportsArticle"],
    eventId: "sdk-75269AD0",
    deferActivation: true,
  };
  const res = await client.rank(req);
  const sum = res.ranking.reduce((s, a) => s + a.probability, 0);
  const sports = res.ranking.find((a) => a.id === "SportsArticle");
  if (res.eventId !== req.eventId || res.rewardActionId === "SportsArticle" || sports.probability !== 0 || Math.abs(sum - 1) > 1e-12) {
    throw new Error("rank: " + JSON.stringify(res));
  }
  await client.events.activate(res.eventId);
  await client.events.reward(res.eventId, { value: 1 });
  let refused = null;
  try {
    await client.rank({ contextFeatures: [], actions: [] });
  } catch (e) {
    refused = e;
  }
  if (!refused || refused.statusCode !== 400 || refused.code !== "BadRequest") {
    throw new Error("an empty rank was not refused as BadRequest: " + (refused && refused.message));
  }
  console.log("rank, activate, reward and a refused rank as the SDK expects: " + res.rewardActionId);
}

main().catch((e) => {
  console.error("FAILED", e.statusCode || "", e.message);
  process.exit(1);
});
