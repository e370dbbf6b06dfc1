// Regenerates the two files made from the API's OpenAPI document: src/schema.d.ts (its types, by
// openapi-typescript) and src/operations.ts (the operation table the client's methods are made
// from: each operationId's method, path, tag, path parameters, body and records field).
//
//   npm run generate                      # the served document: $SIGNALS_API_URL/api/v1/openapi
//   npm run generate -- openapi.json      # a document saved to a file (or another URL)
//   node scripts/generate.mjs DOC --out DIR   # into DIR instead of src/ (the staleness test does)
//
// Into src/, it then builds the bundle again (dist/signals-client.js, scripts/build.mjs), which
// holds the operation table.
// Both files are checked in; tests/connectors/test_typescript.py generates them again from the
// document the service builds and fails when they differ.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { COMMENT_HEADER, astToString } from "openapi-typescript";

import { BUNDLE, bundle } from "./build.mjs";

const HERE = fileURLToPath(new URL("..", import.meta.url));
const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];
const NOTE = "// Made by scripts/generate.mjs from the API's OpenAPI document: do not edit, run `npm run generate`.\n";

export async function readDocument(source) {
  if (/^https?:\/\//.test(source)) {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${source}: ${response.status} ${response.statusText}`);
    return await response.json();
  }
  return JSON.parse(await readFile(source, "utf8"));
}

/** The operation table: every operation of the document by operationId, in the document's order. */
export function operationTable(document) {
  const table = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      if (!operation.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])];
      table[operation.operationId] = {
        method: method.toUpperCase(),
        path,
        tag: operation.tags?.[0] ?? null,
        pathParams: parameters.filter((p) => p.in === "path").map((p) => p.name),
        body: "requestBody" in operation,
        records: recordsField(operation),
      };
    }
  }
  return table;
}

/** The member of the success answer that holds its records: its first array of objects (null when none). */
function recordsField(operation) {
  const responses = operation.responses ?? {};
  const ok = responses["200"] ?? responses["201"] ?? {};
  const schema = ok.content?.["application/json"]?.schema ?? {};
  for (const [name, member] of Object.entries(schema.properties ?? {})) {
    if (member.type === "array" && member.items?.type === "object") return name;
  }
  return null;
}

export async function generate(document) {
  const types = COMMENT_HEADER + NOTE + astToString(await openapiTS(document));
  const rows = Object.entries(operationTable(document))
    .map(([id, row]) => `  ${id}: ${JSON.stringify(row)},`).join("\n");
  const operations = NOTE + "\n"
    + "/** Every operation of the API by operationId: method, path, tag, path parameters, whether it takes a\n"
    + " * JSON body, and the answer's member that holds its records. The client makes one method of each. */\n"
    + `export const OPERATIONS = {\n${rows}\n} as const;\n`;
  return { "schema.d.ts": types, "operations.ts": operations };
}

async function main(argv) {
  const at = argv.indexOf("--out");
  const out = at >= 0 ? argv[at + 1] : join(HERE, "src");
  const rest = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 2)] : argv;
  const source = rest[0] ?? `${(process.env.SIGNALS_API_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "")}/api/v1/openapi`;
  const files = await generate(await readDocument(source));
  await mkdir(out, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await writeFile(join(out, name), text);
    console.log(`${source} -> ${join(out, name)}`);
  }
  if (at < 0) {
    await writeFile(BUNDLE, await bundle());
    console.log(`-> ${BUNDLE}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main(process.argv.slice(2));
}
