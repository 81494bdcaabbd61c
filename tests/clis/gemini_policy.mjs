// Decide tool calls with gemini-cli's own policy engine, as a headless run would.
// usage: node gemini_policy.mjs <bundle chunk> <policy.toml> <approval mode> <calls.json>
// Prints a JSON list: each call's decision ("allow", "deny" or "ask_user").
// The chunk is the bundle file that exports createPolicyEngineConfig and PolicyEngine
// (gemini-cli 0.61.0: packages/core/src/policy/config.ts and policy-engine.ts);
// createPolicyEngineConfig loads the default policies and the --policy file (USER tier)
// exactly as `gemini --policy FILE --approval-mode MODE` does.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [chunk, policyFile, flag, callsFile] = process.argv.slice(2);
const core = await import(pathToFileURL(chunk).href);
// --approval-mode's choice as the engine's ApprovalMode (auto_edit is "autoEdit")
const mode = { default: "default", auto_edit: "autoEdit", yolo: "yolo", plan: "plan" }[flag];
if (!Object.values(core.ApprovalMode).includes(mode)) throw new Error(`no approval mode ${flag}`);
const config = await core.createPolicyEngineConfig({ policyPaths: [policyFile] }, mode, undefined, false);
const engine = new core.PolicyEngine({ ...config, nonInteractive: true, approvalMode: mode });
const decisions = [];
for (const call of JSON.parse(readFileSync(callsFile, "utf8"))) {
  decisions.push((await engine.check(call, undefined)).decision);
}
console.log(JSON.stringify(decisions));
