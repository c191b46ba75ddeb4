// Microsoft's REST client of Azure Personalizer's v1.1-preview.3 API
// (@azure-rest/ai-personalizer) against the service's multi-slot and
// management operations, configured with nothing but an endpoint and a key:
//   node personalizer_admin_sdk.js ENDPOINT KEY
// with the client installed (npm install @azure-rest/ai-personalizer
// @azure/core-auth) in a folder named by NODE_PATH.
const createClient = require("@azure-rest/ai-personalizer").default;
const { AzureKeyCredential } = require("@azure/core-auth");

function expect(what, res, status) {
  if (res.status !== status) {
    throw new Error(what + ": " + res.status + " " + JSON.stringify(res.body));
  }
  return res.body;
}

async function main() {
  const [endpoint, key] = process.argv.slice(2);
  // Over plain HTTP (loopback) the client must be told so; with TLS it
  // takes the endpoint alone.
  const client = createClient(endpoint, new AzureKeyCredential(key), { allowInsecureConnection: endpoint.startsWith("http:") });
  // Multi-slot: the specification's MultiSlot_Rank.json request, then
  // each slot's reward and the activation.
  const page = {
    contextFeatures: [{ user: { profileType: "AnonymousUser", latLong: "47.6,-122.1" } }, { environment: { dayOfMonth: "28", monthOfYear: "8", weather: "Sunny" } }, { device: { mobile: true, windows: true } }, { recentActivity: { itemsInCart: 3 } }],
    actions: [
      { id: "NewsArticle", features: [{ type: "News" }] },
      { id: "SportsArticle", features: [{ type: "Sports" }] },
      { id: "EntertainmentArticle", features: [{ type: "Entertainment" }] },
    ],
    slots: [
      { id: "Main Article", baselineAction: "NewsArticle", features: [{ size: "Large", position: "Top Middle" }], excludedActions: ["SportsArticle", "EntertainmentArticle"] },
      { id: "Side Bar", baselineAction: "SportsArticle", features: [{ size: "Small", position: "Bottom Right" }], excludedActions: ["EntertainmentArticle"] },
    ],
    eventId: "75269AD0-BFEE-4598-8196-C57383D38E10",
    deferActivation: false,
  };
  const ranked = expect("multi-slot rank", await client.path("/multislot/rank").post({ body: page }), "201");
  const shown = ranked.slots.map((s) => s.rewardActionId);
  if (ranked.eventId !== page.eventId || ranked.slots.length !== 2 || shown[0] !== "NewsArticle" || shown[1] === shown[0] || shown[1] === "EntertainmentArticle") {
    throw new Error("multi-slot rank: " + JSON.stringify(ranked));
  }
  expect("multi-slot reward", await client.path("/multislot/events/{eventId}/reward", page.eventId).post({ body: { reward: [{ slotId: "Main Article", value: 1 }, { slotId: "Side Bar", value: 0 }] } }), "204");
  expect("multi-slot activate", await client.path("/multislot/events/{eventId}/activate", page.eventId).post(), "204");
  const conf = expect("get configuration", await client.path("/configurations/service").get(), "200");
  if (conf.rewardAggregation !== "earliest" || conf.learningMode !== "Online") {
    throw new Error("configuration: " + JSON.stringify(conf));
  }
  // The spec's example update (ServiceConfiguration_Update.json), as far
  // as it can be honoured: no log mirroring, no automatic optimization.
  const update = {
    rewardWaitTime: "PT10M", defaultReward: 0.0, rewardAggregation: "earliest", explorationPercentage: 0.2,
    modelExportFrequency: "PT5M", logMirrorEnabled: false, logRetentionDays: -1,
    lastConfigurationEditDate: "2019-01-19T00:00:00Z", learningMode: "Online", isAutoOptimizationEnabled: false,
  };
  const updated = expect("update configuration", await client.path("/configurations/service").put({ body: update }), "200");
  if (updated.explorationPercentage !== 0.2 || updated.rewardWaitTime !== "PT10M") {
    throw new Error("updated: " + JSON.stringify(updated));
  }
  const mirrored = await client.path("/configurations/service").put({ body: { ...update, logMirrorEnabled: true } });
  if (mirrored.status !== "400" || mirrored.body.error.code !== "BadRequest" || !mirrored.body.error.message.includes("logMirrorEnabled")) {
    throw new Error("log mirroring was not refused: " + mirrored.status + " " + JSON.stringify(mirrored.body));
  }
  const policy = expect("get policy", await client.path("/configurations/policy").get(), "200");
  expect("update policy", await client.path("/configurations/policy").put({ body: { name: "sdk", arguments: "adac-oful:lambda=20" } }), "200");
  const reset = expect("reset policy", await client.path("/configurations/policy").delete(), "200");
  if (reset.arguments !== policy.arguments) {
    throw new Error("policy reset to " + JSON.stringify(reset) + ", was " + JSON.stringify(policy));
  }
  expect("model", await client.path("/model").get(), "200");
  const props = expect("model properties", await client.path("/model/properties").get(), "200");
  if (!props.creationTime || !props.lastModifiedTime) {
    throw new Error("model properties: " + JSON.stringify(props));
  }
  // Evaluations: the specification's example (Evaluations_Create.json)
  // with a target the service evaluates, read back, listed, deleted.
  const contract = {
    enableOfflineExperimentation: true, name: "myFirstEvaluation", startTime: "2018-12-19T00:00:00Z",
    endTime: new Date(Date.now() + 3600e3).toISOString(), policies: [{ name: "Custom learning settings 1", arguments: "current" }],
  };
  const created = expect("create evaluation", await client.path("/evaluations").post({ body: contract }), "201");
  if (created.status !== "completed" || created.policyResults.length !== 4 || created.policyResults[3].policySource !== "Custom" || !created.policyResults[0].totalSummary.ipsEstimatorDenominator) {
    throw new Error("evaluation: " + JSON.stringify(created));
  }
  const got = expect("get evaluation", await client.path("/evaluations/{evaluationId}", created.id).get(), "200");
  if (JSON.stringify(got) !== JSON.stringify(created)) {
    throw new Error("the evaluation read differs from its creation: " + JSON.stringify(got));
  }
  const listed = expect("list evaluations", await client.path("/evaluations").get(), "200");
  if (listed.length !== 1 || listed[0].id !== created.id) {
    throw new Error("evaluations: " + JSON.stringify(listed));
  }
  expect("delete evaluation", await client.path("/evaluations/{evaluationId}", created.id).delete(), "204");
  const gone = await client.path("/evaluations/{evaluationId}", created.id).get();
  if (gone.status !== "404" || gone.body.error.code !== "EvaluationNotFound") {
    throw new Error("a deleted evaluation: " + gone.status + " " + JSON.stringify(gone.body));
  }
  const vw = await client.path("/evaluations").post({ body: { ...contract, policies: [{ name: "vw", arguments: "--cb_explore_adf --epsilon 0.2" }] } });
  if (vw.status !== "400" || vw.body.error.code !== "InvalidEvaluationContract") {
    throw new Error("Vowpal Wabbit's arguments were not refused: " + vw.status + " " + JSON.stringify(vw.body));
  }
  expect("reset model", await client.path("/model").delete(), "204");
  expect("delete logs", await client.path("/logs").delete(), "204");
  const logs = expect("log properties", await client.path("/logs/properties").get(), "200");
  if (!logs.dateRange || !logs.dateRange.from) {
    throw new Error("log properties: " + JSON.stringify(logs));
  }
  console.log("a multi-slot page, configuration, policy, model, an evaluation, logs and a refused mirroring as the v1.1-preview.3 client expects");
}

main().catch((e) => {
  console.error("FAILED", e.message);
  process.exit(1);
});
