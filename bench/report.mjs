/**
 * @module Turns raw samples into the table: medians and p90 per row, our/ref ratios, and each
 * target marked met or missed. The same rows go to the terminal, the JSON and bench/RESULTS.md.
 */

export function median(samples) {
  return quantile(samples, 0.5);
}

/** Nearest-rank quantile; undefined for no samples. */
export function quantile(samples, q) {
  if (!samples || samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const fmt = (value, unit) => {
  if (value === undefined) return '–';
  const digits = value < 10 ? 2 : value < 100 ? 1 : 0;
  return `${value.toFixed(digits)} ${unit}`;
};

/**
 * One table row. `ours`/`ref` are sample arrays (or undefined where that server has no such call);
 * `target` is an upper bound in the row's unit, or `{ratio}`: an upper bound on ours/ref (medians),
 * or `{atLeast}`: a lower bound on ours/ref (for rates, where more is better);
 * `note` explains a row that is not a plain timing.
 */
export function row(workload, label, unit, ours, ref, target, note) {
  const o = median(ours);
  const r = median(ref);
  const ratio = o !== undefined && r !== undefined && r > 0 ? o / r : undefined;
  const bound = typeof target === 'object' ? ratio : o;
  const limit = typeof target === 'object' ? target.ratio : target;
  return {
    workload,
    label,
    unit,
    ours: o,
    oursP90: quantile(ours, 0.9),
    ref: r,
    refP90: quantile(ref, 0.9),
    runs: ours?.length ?? 0,
    ratio,
    target,
    met:
      target?.atLeast !== undefined
        ? ratio === undefined
          ? undefined
          : ratio >= target.atLeast
        : limit === undefined || bound === undefined
          ? undefined
          : bound <= limit,
    ...(note ? { note } : {}),
  };
}

/** A target as the table shows it. */
function targetText(r) {
  if (r.target === undefined) return '';
  if (typeof r.target === 'object') return r.target.atLeast !== undefined ? `≥ ${r.target.atLeast}× ref` : `≤ ${r.target.ratio}× ref`;
  return `≤ ${r.target} ${r.unit}`;
}

export function toMarkdown(rows) {
  const lines = [
    '| workload | measure | ours median | ours p90 | ref median | ref p90 | ours/ref | target | met |',
    '|---|---|---:|---:|---:|---:|---:|---:|:---:|',
  ];
  for (const r of rows) {
    const met = r.met === undefined ? '' : r.met ? 'yes' : '**no**';
    const label = r.note ? `${r.label} (${r.note})` : r.label;
    lines.push(
      `| ${r.workload} | ${label} | ${fmt(r.ours, r.unit)} | ${fmt(r.oursP90, r.unit)} | ${fmt(r.ref, r.unit)} | ${fmt(r.refP90, r.unit)} | ${r.ratio === undefined ? '–' : r.ratio.toFixed(2)} | ${targetText(r)} | ${met} |`,
    );
  }
  return lines.join('\n');
}

export function toTerminal(rows) {
  const cells = rows.map((r) => [
    r.workload,
    r.note ? `${r.label} (${r.note})` : r.label,
    fmt(r.ours, r.unit),
    fmt(r.oursP90, r.unit),
    fmt(r.ref, r.unit),
    r.ratio === undefined ? '–' : r.ratio.toFixed(2),
    targetText(r),
    r.met === undefined ? '' : r.met ? 'ok' : 'MISS',
  ]);
  const head = ['workload', 'measure', 'ours', 'ours p90', 'ref', 'ours/ref', 'target', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((v, i) => (i < 2 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return [line(head), ...cells.map(line)].join('\n');
}
