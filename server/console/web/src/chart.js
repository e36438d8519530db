// Time charts: uPlot draws them (no hand-written plotting here). A chart
// is described to screen readers by its label and the latest values.

import uPlot from 'uplot';
import { h, fill } from './dom.js';

const colors = ['#1f5fae', '#b3541e', '#2e7d32', '#8e24aa', '#00838f', '#6d4c41'];

/**
 * A line chart of series over time.
 * @param {string} title
 * @param {number[]} times Unix seconds
 * @param {{label: string, values: number[]}[]} series
 * @param {(v: number) => string} fmt
 */
export function timeChart(title, times, series, fmt) {
  const latest = series.map((s) => `${s.label} ${fmt(s.values.at(-1) ?? 0)}`).join(', ');
  const box = h('figure', { class: 'chart' },
    h('figcaption', {}, title),
    h('div', { class: 'plot', role: 'img', 'aria-label': `${title}: ${latest || 'no samples yet'}` }));
  const plot = box.querySelector('.plot');
  const draw = () => {
    const width = Math.max(260, Math.min(plot.clientWidth || 600, 900));
    const opts = {
      width, height: 180,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      // At least the last five minutes, so that the first samples do not
      // stretch over years.
      scales: { x: { time: true, auto: false, range: [Math.min(times[0] ?? 0, (times.at(-1) ?? 0) - 300), (times.at(-1) ?? 0) + 5] } },
      axes: [{}, { values: (_u, vals) => vals.map(fmt), size: 70 }],
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length], width: 2, value: (_u, v) => (v == null ? '' : fmt(v)) }))],
    };
    fill(plot);
    new uPlot(opts, [times, ...series.map((s) => s.values)], plot);
  };
  // Drawn once the figure is in the page, at the width it got.
  requestAnimationFrame(draw);
  return box;
}
