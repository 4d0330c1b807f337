// The page of `python -m seq2seq.serve`: translate as you type, draw the attention.
//
//   typing --(250 ms quiet)--> POST /translate {"text": [sentence], "sentences": true}
//     -> {"translations", "warnings", "sentences": [[{source, translation, confidence}]]}
//     -> the translation, each sentence less sure than UNSURE marked (class "unsure", its
//        confidence in its title), and the warnings
//   and at once, if the engine draws attention (/info says): POST /attention {"text": sentence}
//     -> {"translation", "warnings", "maps": [{kind, layer, title, queries, keys, weights}]}
//     -> the chosen map (kind, layer, head) as a table: rows the queries, columns the keys,
//        each cell coloured by its weight (viridis, 0..1)
//   with terms in the glossary box, /translate's {"glossary": {source: target}} too: one line
//     each, "source<TAB>target", or a term alone, kept as it is (the attention stays the
//     model's own)
//   on opening: /info's example sentence in the box, translated as if typed
//   with serve.suggestions on (/info): under the translation, a box to correct it ->
//     POST /suggest {"q": sentence, "s": the correction, "source", "target"}, kept
// Every URL is relative to the page's ("translate", not "/translate"), so that under
// serve.url_prefix (the page at /translate-api/) it asks /translate-api/translate.
"use strict";

const DEBOUNCE_MS = 250;
const UNSURE = 0.5; // a sentence less likely than this to be acceptable is marked
const MOST_PIECES_SHOWN = 300;
// matplotlib's viridis at 0, 1/8, ..., 1: the colours of `python -m seq2seq.plot attention`
const VIRIDIS = [
  [68, 1, 84], [71, 45, 123], [59, 82, 139], [44, 114, 142], [33, 145, 140],
  [40, 174, 128], [94, 201, 98], [173, 220, 48], [253, 231, 37],
];

const $ = (id) => document.getElementById(id);
let attention = null; // the last answer of /attention
let engine = "torch"; // /info's engine
let showsAttention = true; // /info's attention: whether the engine answers /attention
let suggesting = false; // /info's serve.suggestions: whether POST /suggest keeps corrections
let pair = {}; // the first model's {source, target}: the language codes of a suggestion
let pending = null; // the AbortController of the request in flight
let timer = null;

function viridis(value) {
  const x = Math.min(Math.max(value, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const t = x - i;
  const rgb = VIRIDIS[i].map((c, k) => Math.round(c + t * (VIRIDIS[i + 1][k] - c)));
  return `rgb(${rgb.join(",")})`;
}

async function post(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

// The translation, each sentence's in a span of its own (found in turn in the text, which
// holds the white space between them): its confidence in its title, marked below UNSURE.
function showTranslation(text, sentences) {
  const shown = $("translation");
  shown.replaceChildren();
  let at = 0;
  for (const { translation, confidence } of sentences) {
    const start = translation ? text.indexOf(translation, at) : -1;
    if (start < 0) continue;
    const span = document.createElement("span");
    span.textContent = translation;
    if (confidence !== null) {
      span.title = `confidence ${confidence.toFixed(2)}`;
      span.classList.toggle("unsure", confidence < UNSURE);
    }
    shown.append(text.slice(at, start), span);
    at = start + translation.length;
  }
  shown.append(text.slice(at));
}

function showWarnings(warnings) {
  $("warnings").replaceChildren(
    ...warnings.map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }),
  );
}

async function update() {
  const sentence = $("sentence").value;
  if (pending) pending.abort();
  if (!sentence.trim()) {
    pending = null;
    attention = null;
    $("translation").textContent = "";
    showWarnings([]);
    showError("");
    offerSuggestion("");
    draw();
    return;
  }
  const controller = (pending = new AbortController());
  $("translation").setAttribute("aria-busy", "true");
  try {
    const terms = glossary();
    const asked = { text: [sentence], sentences: true, ...(terms && { glossary: terms }) };
    const [answer, drawn] = await Promise.all([
      post("translate", asked, controller.signal),
      showsAttention ? post("attention", { text: sentence }, controller.signal) : null,
    ]);
    if (drawn) {
      attention = drawn;
      chooseOptions();
      draw();
    }
    showTranslation(answer.translations[0], answer.sentences[0]);
    showWarnings(answer.warnings);
    offerSuggestion($("translation").textContent);
    showError("");
  } catch (error) {
    if (error.name !== "AbortError") showError(error.message);
  } finally {
    if (pending === controller) $("translation").removeAttribute("aria-busy");
  }
}

// The glossary box's entries, {source: target} (null: none): each line "source<TAB>target",
// or a term alone, its own target; the service checks them and says what is wrong.
function glossary() {
  const lines = $("glossary").value.split("\n").filter((line) => line.trim());
  if (!lines.length) return null;
  return Object.fromEntries(
    lines.map((line) => {
      const [source, ...target] = line.split("\t");
      return [source, target.length ? target.join("\t") : source];
    }),
  );
}

// The translation in a box of its own, to correct and send as a suggestion (if the service
// keeps them).
function offerSuggestion(translation) {
  $("suggest").hidden = !suggesting || !translation;
  $("better").value = translation;
  $("suggested").textContent = "";
}

async function suggest(event) {
  event.preventDefault();
  const suggestion = { q: $("sentence").value, s: $("better").value, ...pair };
  try {
    await post("suggest", suggestion);
    $("suggested").textContent = "Thank you: kept, to improve the model.";
  } catch (error) {
    $("suggested").textContent = error.message;
  }
}

function setOptions(select, values, label) {
  const keep = select.value;
  select.replaceChildren(
    ...values.map((value) => new Option(label(value), String(value))),
  );
  if (values.map(String).includes(keep)) select.value = keep;
}

function chooseOptions() {
  const maps = attention.maps.filter((m) => m.kind === $("kind").value);
  setOptions($("layer"), maps.map((m) => m.layer), (layer) => `${layer} of ${maps.length}`);
  const heads = maps[0].weights.length;
  setOptions($("head"), [...Array(heads).keys()].map((h) => h + 1), (h) => `${h} of ${heads}`);
}

function cell(tag, text, scope) {
  const element = document.createElement(tag);
  element.textContent = text;
  if (scope) element.scope = scope;
  return element;
}

function draw() {
  const box = $("heatmap");
  if (!attention) {
    const hint = cell(
      "p",
      showsAttention
        ? "Type a sentence to see its attention."
        : `The attention needs our torch model; this service decodes with ${engine} alone.`,
    );
    hint.className = "hint";
    box.replaceChildren(hint);
    return;
  }
  const map = attention.maps.find(
    (m) => m.kind === $("kind").value && String(m.layer) === $("layer").value,
  );
  const head = Number($("head").value);
  const table = document.createElement("table");
  table.createCaption().textContent = `${map.title}, head ${head}`;
  const header = table.createTHead().insertRow();
  const corner = cell("td", "query \\ key");
  corner.className = "corner";
  header.append(corner, ...map.keys.map((k) => cell("th", k, "col")));
  const body = table.createTBody();
  map.weights[head - 1].forEach((row, q) => {
    const line = body.insertRow();
    line.append(cell("th", map.queries[q], "row"));
    row.forEach((weight, k) => {
      const td = cell("td", weight.toFixed(2).replace(/^0/, ""));
      td.style.background = viridis(weight);
      td.style.color = weight > 0.6 ? "#000" : "#fff";
      td.title = `${map.queries[q]} -> ${map.keys[k]}: ${weight.toFixed(4)}`;
      line.append(td);
    });
  });
  box.replaceChildren(table);
}

async function describeModel() {
  try {
    const response = await fetch("info");
    const info = await response.json();
    engine = info.engine;
    showsAttention = info.attention;
    suggesting = info.serve.suggestions;
    pair = { source: info.models[0].source, target: info.models[0].target };
    draw();
    const step = info.checkpoint.step === undefined ? "" : `, step ${info.checkpoint.step}`;
    const size =
      info.parameters === undefined ? engine : `${info.parameters.toLocaleString("en")} parameters`;
    const model = info.config.model; // none for an Argos package
    const shape = model
      ? `, ${model.enc_layers} + ${model.dec_layers} layers, ${model.n_heads} heads`
      : "";
    $("model").textContent = `${info.models[0].name}${step}: ${size}${shape}, on ${info.device}`;
    const pieces = info.vocab.source.pieces.filter((p) => !/^<.*>$/.test(p));
    if (pieces.length <= MOST_PIECES_SHOWN) {
      $("pieces").textContent = pieces.map((p) => p.replace(/^\u2581/, "")).join(" ");
      $("vocabulary").hidden = false;
    }
    showExample(info.example);
  } catch (error) {
    showError(`cannot read /info: ${error.message}`);
  }
}

// A sentence from the validation split, translated before anything is typed; selected, so
// that typing replaces it.
function showExample(example) {
  const box = $("sentence");
  if (!example || box.value) return;
  box.value = example;
  box.select();
  update();
}

function updateSoon() {
  clearTimeout(timer);
  timer = setTimeout(update, DEBOUNCE_MS);
}

$("sentence").addEventListener("input", updateSoon);
$("glossary").addEventListener("input", updateSoon);
$("kind").addEventListener("change", () => {
  if (attention) chooseOptions();
  draw();
});
$("suggest").addEventListener("submit", suggest);
$("layer").addEventListener("change", draw);
$("head").addEventListener("change", draw);
describeModel();
if ($("sentence").value) update(); // a sentence the browser kept across a reload
