/**
 * The time-series chart of the entity page, drawn by uPlot on a canvas (docs/dependencies.md): one
 * series per row, x in the chosen time zone (uPlot's `tzDate`), gaps where a bucket has no value.
 * The x-axis spans the time range asked for (from the earliest bucket's start when a bucket starts
 * before it), whatever the number of buckets: uPlot's own range for one bucket is years wide.
 * The drawn range is kept on the container (`data-x-min`, `data-x-max`, epoch seconds).
 */
import uPlot from "uplot";
import { h, replace } from "./dom.js";

/** Series colours, distinguishable for common colour-vision deficiencies (Okabe–Ito). */
const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];

export interface ChartSeries {
  readonly label: string;
  /** One value per x, null where the bucket has none. */
  readonly values: readonly (number | null)[];
}

/** A time zone uPlot can draw in; the browser's own when Intl does not know `zone`. */
function drawableZone(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

export class Chart {
  private plot: uPlot | undefined;
  private readonly resize = () => this.plot?.setSize({ width: this.width(), height: this.height });

  constructor(
    private readonly container: HTMLElement,
    private readonly height = 320,
  ) {
    window.addEventListener("resize", this.resize);
  }

  private width(): number {
    return Math.max(320, this.container.clientWidth);
  }

  /** Draws `series` over `xs` (epoch seconds) across `range` (epoch seconds), replacing what was drawn. */
  draw(
    xs: readonly number[],
    series: readonly ChartSeries[],
    zone: string,
    unit: string,
    title: string,
    range: { readonly from: number; readonly to: number },
  ): void {
    this.plot?.destroy();
    this.plot = undefined;
    if (xs.length === 0) {
      replace(this.container, h("p", { class: "empty" }, "No values in this range."));
      return;
    }
    replace(this.container);
    const tz = drawableZone(zone);
    const min = Math.min(range.from, xs[0] ?? range.from);
    const max = Math.max(range.to, xs[xs.length - 1] ?? range.to);
    const options: uPlot.Options = {
      title,
      width: this.width(),
      height: this.height,
      ...(tz === undefined ? {} : { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1e3), tz) }),
      scales: { x: { time: true, range: (): uPlot.Range.MinMax => [min, max] } },
      series: [
        { label: "Time" },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length] ?? "#000",
          width: 2,
          spanGaps: false,
          // A lone bucket has no line to draw: its point shows it.
          ...(xs.length === 1 ? { points: { show: true } } : {}),
        })),
      ],
      axes: [{}, { label: unit === "none" ? "" : unit, size: 60 }],
      hooks: {
        setScale: [
          (u, key) => {
            if (key !== "x") return;
            this.container.dataset.xMin = String(u.scales.x?.min ?? "");
            this.container.dataset.xMax = String(u.scales.x?.max ?? "");
          },
        ],
      },
    };
    const data = [Array.from(xs), ...series.map((s) => Array.from(s.values))] as uPlot.AlignedData;
    this.plot = new uPlot(options, data, this.container);
  }

  destroy(): void {
    window.removeEventListener("resize", this.resize);
    this.plot?.destroy();
  }
}
