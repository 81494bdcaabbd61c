// Parse Mermaid text from stdin with the real mermaid package; exit 1 with its error.
import { JSDOM } from "jsdom";
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
let text = "";
for await (const chunk of process.stdin) text += chunk;
try {
  const result = await mermaid.parse(text);
  console.log(JSON.stringify(result));
} catch (error) {
  console.error(String(error.message || error));
  process.exit(1);
}
