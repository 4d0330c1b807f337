// DeepL's official Node client (deepl-node) against the service, for
// tests/service/test_deepl_node.py: node client.mjs SERVER_URL AUTH_KEY FOLDER SENTENCE...
// Prints one JSON object: what each call answered, for the test to check. FOLDER: a scratch
// folder for the document round trip.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as deepl from "deepl-node";

const [serverUrl, authKey, folder, ...sentences] = process.argv.slice(2);
const translator = new deepl.Translator(authKey, { serverUrl });
const result = (r) => ({ text: r.text, detected: r.detectedSourceLang, billed: r.billedCharacters });
const failure = (error) => ({ error: error.constructor.name, message: error.message });
const out = {};

out.one = result(await translator.translateText(sentences[0], null, "DIGITS"));
out.many = (await translator.translateText(sentences, "EN", "DIGITS")).map(result);
out.manyDetected = (await translator.translateText(sentences, null, "DIGITS")).map(result);
out.sources = (await translator.getSourceLanguages()).map((l) => [l.code, l.name]);
out.targets = (await translator.getTargetLanguages()).map((l) => [l.code, l.supportsFormality]);

const entries = new deepl.GlossaryEntries({ entries: { five: "five" } });
const glossary = await translator.createGlossary("numbers", "EN", "DIGITS", entries);
out.glossary = { name: glossary.name, count: glossary.entryCount, ready: glossary.ready };
out.listed = (await translator.listGlossaries()).map((g) => g.glossaryId === glossary.glossaryId);
out.followed = result(await translator.translateText(sentences[1], "EN", "DIGITS", { glossary }));
out.entries = (await translator.getGlossaryEntries(glossary)).entries();
await translator.deleteGlossary(glossary);
out.afterDelete = (await translator.listGlossaries()).length;

await writeFile(join(folder, "notes.txt"), sentences.map((s) => s + "\n").join(""));
const status = await translator.translateDocument(
  join(folder, "notes.txt"), join(folder, "out.txt"), null, "DIGITS");
out.document = { done: status.done(), text: await readFile(join(folder, "out.txt"), "utf8") };

out.wrongKey = await new deepl.Translator("third", { serverUrl })
  .translateText(sentences[0], null, "DIGITS").then(result, failure);
// GET /v2/usage: the test checks it only where the service answers it
out.usage = await translator.getUsage().then((u) => ({ character: u.character }), failure);

console.log(JSON.stringify(out));
