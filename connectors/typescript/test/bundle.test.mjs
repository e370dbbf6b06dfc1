// The checked-in bundle (dist/signals-client.js) is what `npm run build` makes of src/ today, and
// it is a plain ES module with no import a page could not resolve.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { BUNDLE, bundle } from "../scripts/build.mjs";
import { VERSION } from "../dist/signals-client.js";

test("dist/signals-client.js is the build of src/ (else: npm run build, and commit it)", async () => {
  const built = await bundle();
  const checkedIn = await readFile(BUNDLE, "utf8");
  assert.ok(built === checkedIn, "dist/signals-client.js is stale: run `npm run build` in connectors/typescript");
});

test("the bundle imports nothing: a page loads it alone", async () => {
  const text = await readFile(BUNDLE, "utf8");
  assert.doesNotMatch(text, /^\s*import\s/m);
  assert.doesNotMatch(text, /\brequire\(/);
});

test("VERSION is the package's version", async () => {
  const own = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, own.version);
});
