// The Markdown report: printed at the end of a run and written to results/latest.md. It is made
// only from the results object (the same one written to results/latest.json), so a report can
// be rebuilt from a saved JSON file with `node bench.mjs --report results/latest.json`.

import { formatBytes, formatMs, formatRatio, markdownTable, significant } from "./stats.mjs";

const REFERENCE_NOTE = "tiktoken (reference)";

/** A library's column header; estimators carry "(estimate)" in their label. */
function libHeader(lib) {
  return lib.label;
}

function count(n) {
  return n.toLocaleString("en-US");
}

// --- Exactness ------------------------------------------------------------------------------

/** One cell of the exactness table. */
function verdictCell(check, id) {
  const verdict = check.verdicts?.[id];
  const r = check.results[id];
  if (!r || !verdict) return "";
  const ref = check.reference;
  switch (verdict) {
    case "reference":
      return count(r.total);
    case "ok":
      return "✓";
    case "mismatch":
      return `✗ ${count(r.total)} (${r.total - ref > 0 ? "+" : ""}${r.total - ref})`;
    case "estimate":
      return ref !== undefined ? `~${count(r.total)} (${r.total >= ref ? "+" : ""}${significant((100 * (r.total - ref)) / ref, 2)}%)` : `~${count(r.total)}`;
    case "unverified":
      if (check.counted < 2) return `${count(r.total)}*`;
      return check.consensus ? "= others*" : `${count(r.total)}* ≠`;
    case "no-count":
      return r.status === "skipped" ? "skipped" : r.status === "not-run" ? "not run" : r.status ?? "—";
    default:
      return verdict;
  }
}

/** The exactness section: a summary table of every input and a list of the disagreements. */
function exactnessSection(results) {
  const { exactness, libraries } = results;
  const out = ["## Exactness", ""];
  out.push(
    "Every exact library's count is compared with the `tiktoken` package's (the reference; its column shows the reference count). " +
      "✓ = same count (for the chat batches: the same count for every single string); ✗ = a different count, with the difference. " +
      "Estimators are not compared: their cells show the estimate and its error. " +
      "Special tokens such as `<|endoftext|>` are counted as ordinary text by every library.",
    "",
  );
  const ids = libraries.map((l) => l.id);
  const header = ["input", "encoding", ...libraries.map((l) => (l.id === "tiktoken" ? REFERENCE_NOTE : libHeader(l)))];
  const rows = [];
  for (const check of exactness.rows) {
    rows.push([check.input, check.encoding.replace("_base", ""), ...ids.map((id) => verdictCell(check, id))]);
  }
  out.push(markdownTable(header, rows), "");
  if (exactness.rows.some((c) => Object.values(c.verdicts ?? {}).includes("unverified"))) {
    out.push(
      "\\* the reference did not finish within the time cap, so this count is not verified; " +
        "`= others`: every exact library that finished gave the same count; `≠`: they differ.",
      "",
    );
  }
  out.push("### Disagreements with the reference", "");
  if (!exactness.disagreements.length) {
    out.push("None: every exact library agrees with `tiktoken` on every input it counted.", "");
  } else {
    out.push(
      markdownTable(
        ["library", "input", "encoding", "reference", "count", "difference", "detail"],
        exactness.disagreements.map((d) => [d.id, d.input, d.encoding, d.reference === undefined ? "—" : count(d.reference), d.count === undefined ? "—" : count(d.count), d.diff === undefined ? "—" : `${d.diff > 0 ? "+" : ""}${d.diff}`, d.detail || ""]),
      ),
      "",
    );
  }
  out.push(
    exactness.oursChecked
      ? exactness.oursFailed
        ? "**Our counter disagrees with the reference: the run exits with status 1.**"
        : "Our counter agrees with the reference on every input."
      : "Our counter was not part of this run, so nothing of ours was checked.",
    "",
  );
  return out;
}

// --- Throughput -----------------------------------------------------------------------------

function throughputSection(results) {
  const { throughput, libraries, corpora } = results;
  const out = ["## Throughput (o200k_base)", ""];
  const base = libraries.find((l) => l.id === throughput.baseline);
  out.push(
    `${throughput.rounds} rounds after one warm-up round, in one Node process; each round counts a part of every corpus that no library has seen ` +
      `(first pass), then the same part again (re-count), with the library order rotated every round. ` +
      `MB = 10^6 bytes of UTF-8 input.`,
    "",
  );
  if (base) {
    const title = throughput.baseline === "ours" ? "How many times faster we are" : `Ours was not loaded: ratios are ${base.label} ÷ peer instead of ours ÷ peer`;
    for (const pass of ["first", "recount"]) {
      out.push(`### ${title}: ${pass === "first" ? "first pass" : "re-count"}`, "");
      const whose = base.id === "ours" ? "our" : `${base.label}'s`;
      out.push(`Median over the rounds of (${whose} MB/s ÷ the peer's MB/s in the same round), with the min–max over the rounds.`, "");
      const peers = libraries.filter((l) => l.id !== throughput.baseline);
      const rows = corpora.map((c) => [c.label, ...peers.map((p) => formatRatio(throughput.summary[c.id].ratios[p.id]?.[pass]))]);
      out.push(markdownTable(["corpus", ...peers.map(libHeader)], rows), "");
    }
  }
  out.push("### Absolute throughput", "", "Median MB/s over the rounds: first pass / re-count.", "");
  const rows = corpora.map((c) => [
    `${c.label} (${formatBytes(throughput.summary[c.id].partBytes.median)} a part)`,
    ...libraries.map((l) => {
      const a = throughput.summary[c.id].absolute[l.id];
      return a ? `${significant(a.first.median)} / ${significant(a.recount.median)}` : "—";
    }),
  ]);
  out.push(markdownTable(["corpus", ...libraries.map(libHeader)], rows), "");
  return out;
}

// --- Pathological ---------------------------------------------------------------------------

function pathologicalCell(result, sizes, capMs) {
  if (!result) return "—";
  const parts = sizes.map((size) => {
    const r = result.sizes[size];
    if (r.ms !== undefined) return formatMs(r.ms);
    if (r.status === "timeout") return `timeout > ${capMs / 1000} s`;
    if (r.status === "skipped") return `> ${capMs / 1000} s†`;
    if (r.status === "not-run") return "not run";
    return "error";
  });
  const slope = result.slope
    ? ` — slope ${result.slope.atLeast ? "> " : ""}${significant(result.slope.value, 2)}${result.slope.to === sizes.at(-1) ? "" : "‡"}`
    : "";
  return parts.join(" · ") + slope;
}

function pathologicalSection(results) {
  const { pathological, libraries } = results;
  const sizes = pathological.sizes;
  const out = ["## Pathological inputs (o200k_base)", ""];
  out.push(
    `Time to count ${sizes.map((s) => formatBytes(s).replace(" kB", "k").replace(" MB", "M").replace(" B", "")).join(" · ")} characters, each library in a child process of its own, ` +
      `one count per input (a repeated count would measure the library's cache), with a cap of ${pathological.capMs / 1000} s per input. ` +
      `The slope is the log-log slope of time against size between 100k and 1M characters: ~1.0 is linear, ~2.0 quadratic.`,
    "",
  );
  const rows = pathological.kinds.map((kind) => [kind.label, ...libraries.map((l) => pathologicalCell(pathological.results[l.id]?.[kind.id], sizes, pathological.capMs))]);
  out.push(markdownTable(["input", ...libraries.map(libHeader)], rows), "");
  out.push(
    "† not run: the smaller size, scaled linearly (the best any counter can do), already needs more than the cap " +
      "(`--no-skip` runs it anyway, and it is killed at the cap).  ",
    "‡ slope between 10k and 100k characters, because the 1M input did not finish. " +
      "\"slope > x\": the larger input was killed at the cap, so the slope is at least what finishing exactly at the cap would give.",
    "",
  );
  return out;
}

// --- Time to first count and bundle size ---------------------------------------------------

function firstCountSection(results) {
  const { firstCount, libraries } = results;
  const out = ["## Time to first count", ""];
  out.push(
    `A fresh \`node\` process loads the library and counts one short string (${firstCount.encoding}); the time is performance.now() after the count, ` +
      `i.e. since the process started. Median of ${firstCount.runs} runs per library, interleaved. ` +
      `An empty process (the same harness, no library) takes ${formatMs(firstCount.baseline?.median)}; the second column subtracts it.`,
    "",
  );
  const rows = libraries.map((l) => {
    const r = firstCount.libs[l.id];
    if (!r || r.error) return [libHeader(l), r?.error ?? "—", "", ""];
    // A library that loads almost nothing can come out a hair below the empty process.
    return [libHeader(l), formatMs(r.raw.median), r.net > 0 ? formatMs(r.net) : "≈ 0", `${formatMs(r.raw.min)} – ${formatMs(r.raw.max)}`];
  });
  out.push(markdownTable(["library", "since process start", "minus empty process", "min – max"], rows, [, "right", "right", "right"]), "");
  return out;
}

function bundleSection(results) {
  const out = ["## Bundle size (o200k_base in a browser)", ""];
  out.push(
    "The files a browser downloads to count o200k tokens with native ES modules: the entry module, every module it imports, " +
      "its rank data and its wasm, as shipped. Brotli at quality 11 is applied to each file, as a server would send it, and summed.",
    "",
  );
  const rows = results.bundles.map((b) =>
    b.error ? [b.label, "—", "—", `error: ${b.error}`] : [b.label, formatBytes(b.brotli), formatBytes(b.raw), `${b.files.length} file${b.files.length === 1 ? "" : "s"}: ${b.note}`],
  );
  out.push(markdownTable(["library", "brotli q11", "raw", "what is counted"], rows, [, "right", "right"]), "");
  return out;
}

// --- The whole report -----------------------------------------------------------------------

export function renderReport(results) {
  const { machine, libraries, corpora } = results;
  const out = ["# Token counters: CCM against the JavaScript tokenizers", ""];
  out.push(`Date: ${results.date}  `, `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, ${machine.platform}  `);
  out.push(`Command: \`${results.command}\` (${(results.durationMs / 1000).toFixed(0)} s)`, "");
  if (machine.loadAverage >= 1) {
    out.push(
      `> The machine was busy when the run started (1-minute load average ${machine.loadAverage.toFixed(2)} on ${machine.cores} cores): ` +
        "other processes competed for the CPU, so the timings are less reliable than on an idle machine.",
      "",
    );
  }
  if (!results.ours.loaded) {
    out.push(`> **Our counter was not loaded** (${results.ours.reason}). This run measured the peers only.`, "");
  }
  out.push(
    markdownTable(
      ["library", "version", "how it counts"],
      libraries.map((l) => [libHeader(l), l.version, l.how]),
    ),
    "",
  );
  out.push(
    markdownTable(
      ["corpus", "size", "source"],
      corpora.map((c) => [c.label, `${formatBytes(c.bytes)} (${count(c.chars)} chars)`, c.source]),
    ),
    "",
  );
  const sections = { exactness: exactnessSection, throughput: throughputSection, pathological: pathologicalSection, firstCount: firstCountSection, bundles: bundleSection };
  for (const [key, render] of Object.entries(sections)) {
    if (results[key]) out.push(...render(results));
  }
  return out.join("\n");
}

/** The disagreements alone, printed right after the exactness stage. */
export function renderDisagreements(results) {
  return exactnessSection(results).join("\n");
}
