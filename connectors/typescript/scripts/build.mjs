// Builds dist/signals-client.js: src/ and openapi-fetch bundled by esbuild into one ES module that
// a page imports with <script type="module"> (and Node 20 with import). The bundle is checked in,
// so a page can use it without Node; test/bundle.test.mjs builds it again and fails when it differs.
//
//   npm run build
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const HERE = fileURLToPath(new URL("..", import.meta.url));
export const BUNDLE = `${HERE}dist/signals-client.js`;

/** The bundle's text, built from src/ (written nowhere). */
export async function bundle() {
  const fetchVersion = JSON.parse(await readFile(`${HERE}node_modules/openapi-fetch/package.json`, "utf8")).version;
  const own = JSON.parse(await readFile(`${HERE}package.json`, "utf8")).version;
  const result = await esbuild.build({
    entryPoints: [`${HERE}src/index.ts`],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    write: false,
    absWorkingDir: HERE,
    legalComments: "inline",
    charset: "utf8",
    banner: {
      js: `// Signals API client ${own}: made by \`npm run build\` from connectors/typescript/src (do not edit).\n`
        + `// Includes openapi-fetch ${fetchVersion} (MIT licence, https://openapi-ts.dev).`,
    },
  });
  return result.outputFiles[0].text;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(BUNDLE, await bundle());
  console.log(`-> ${BUNDLE}`);
}
