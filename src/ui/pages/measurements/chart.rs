//! The measurements chart: one user's weight over time, with axes, a legend, a text
//! summary and the same data as a table.

use leptos::prelude::*;

use crate::model::measurements::{Point, Rejected};
use crate::ui::components::moment::Moment;
use crate::ui::components::table::DataTable;

use crate::ui::components::moment::ms_of_iso as parse_ms;

/// The weight chart's plot area: times and weights mapped to SVG coordinates.
#[derive(Clone, Copy)]
struct Plot {
    t0: i64,
    t1: i64,
    w0: f64,
    w1: f64,
}

impl Plot {
    const WIDTH: f64 = 720.0;
    const HEIGHT: f64 = 220.0;
    /// Room for the weight labels on the left and the dates below.
    const LEFT: f64 = 72.0;
    const RIGHT: f64 = 16.0;
    const TOP: f64 = 12.0;
    const BOTTOM: f64 = 28.0;

    /// Spans every accepted point and rejected attempt; weights at least 2 kg apart so a
    /// flat series is not drawn on the edge.
    fn around(points: &[Point], rejected: &[Rejected]) -> Plot {
        let times: Vec<i64> = points
            .iter()
            .map(|p| &p.timestamp)
            .chain(rejected.iter().map(|r| &r.timestamp))
            .filter_map(|t| parse_ms(t))
            .collect();
        let (w0, w1) = points
            .iter()
            .map(|p| p.weight_kg)
            .chain(rejected.iter().map(|r| r.weight_kg))
            .fold((f64::MAX, f64::MIN), |(a, b), w| (a.min(w), b.max(w)));
        let (w0, w1) = if w1 - w0 < 1.0 {
            (w0 - 1.0, w1 + 1.0)
        } else {
            (w0, w1)
        };
        Plot {
            t0: times.iter().min().copied().unwrap_or(0),
            t1: times.iter().max().copied().unwrap_or(1),
            w0,
            w1,
        }
    }

    fn x(self, t: i64) -> f64 {
        Self::LEFT
            + (t - self.t0) as f64 / ((self.t1 - self.t0).max(1) as f64)
                * (Self::WIDTH - Self::LEFT - Self::RIGHT)
    }

    fn y(self, kg: f64) -> f64 {
        Self::HEIGHT
            - Self::BOTTOM
            - (kg - self.w0) / (self.w1 - self.w0) * (Self::HEIGHT - Self::TOP - Self::BOTTOM)
    }

    /// Four weights evenly from the lowest to the highest, for the weight axis.
    fn weight_ticks(self) -> [f64; 4] {
        let step = (self.w1 - self.w0) / 3.0;
        [self.w0, self.w0 + step, self.w0 + 2.0 * step, self.w1]
    }

    /// The first, middle and last time, for the time axis.
    fn time_ticks(self) -> [i64; 3] {
        [self.t0, self.t0 + (self.t1 - self.t0) / 2, self.t1]
    }
}

/// `24 Nov 08:00` (UTC), for the time axis, field by field.
fn short_time(ms: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, month, day, hour, minute, _) = crate::ui::components::moment::utc_fields(ms);
    let month = MONTHS[(month - 1).clamp(0, 11) as usize];
    format!("{day:02} {month} {hour:02}:{minute:02}")
}

/// Weight over time: accepted measurements as a line with dots, rejected attempts as red
/// crosses where they would have been; axes with weights and dates, a legend, and the same
/// data as a table for those who do not see the chart.
#[component]
pub fn Series(points: Vec<Point>, rejected: Vec<Rejected>) -> impl IntoView {
    if points.is_empty() && rejected.is_empty() {
        return view! { <p class="mt-6 text-sm text-slate-500" data-testid="no-series">"No measurements for this user."</p> }.into_any();
    }
    let plot = Plot::around(&points, &rejected);
    let line = points
        .iter()
        .filter_map(|p| {
            parse_ms(&p.timestamp).map(|t| format!("{:.1},{:.1}", plot.x(t), plot.y(p.weight_kg)))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let (lo, hi) = points
        .iter()
        .map(|p| p.weight_kg)
        .fold((f64::MAX, f64::MIN), |(a, b), w| (a.min(w), b.max(w)));
    let accepted = if points.is_empty() {
        "no accepted measurements".to_string()
    } else {
        format!(
            "{} accepted measurements from {lo:.1} to {hi:.1} kg",
            points.len()
        )
    };
    let summary = format!(
        "Weight over time: {accepted}, {} rejected attempts, {} to {} UTC",
        rejected.len(),
        short_time(plot.t0),
        short_time(plot.t1)
    );
    let table = view! { <DataAsTable points=points.clone() rejected=rejected.clone() /> };
    view! {
        <figure class="mt-6 rounded-lg border border-slate-200 bg-white p-4">
            <Legend />
            <svg viewBox=format!("0 0 {} {}", Plot::WIDTH, Plot::HEIGHT) class="mt-2 h-60 w-full" role="img" aria-label=summary.clone() data-testid="series">
                <Axes plot />
                <polyline points=line fill="none" class="stroke-sky-400" stroke-width="1.5" />
                <Dots points plot />
                <Crosses rejected plot />
            </svg>
            <figcaption class="mt-1 text-xs text-slate-500" data-testid="series-caption">{summary}</figcaption>
            {table}
        </figure>
    }
    .into_any()
}

/// Grid lines with the weights on the left, and the first, middle and last time below.
#[component]
fn Axes(plot: Plot) -> impl IntoView {
    let weights = plot
        .weight_ticks()
        .into_iter()
        .map(|kg| {
            let y = format!("{:.1}", plot.y(kg));
            view! {
                <line x1=format!("{}", Plot::LEFT) x2=format!("{}", Plot::WIDTH - Plot::RIGHT) y1=y.clone() y2=y.clone() class="stroke-slate-200" stroke-width="1" />
                <text x=format!("{}", Plot::LEFT - 6.0) y=y dominant-baseline="middle" text-anchor="end" class="fill-slate-500 text-[11px] max-sm:text-[20px]" data-testid="weight-tick">{format!("{kg:.1}")}</text>
            }
        })
        .collect_view();
    let times = plot
        .time_ticks()
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let anchor = ["start", "middle", "end"][i];
            view! {
                <text x=format!("{:.1}", plot.x(t)) y=format!("{}", Plot::HEIGHT - 8.0) text-anchor=anchor class="fill-slate-500 text-[11px] max-sm:text-[20px]" data-testid="time-tick">{short_time(t)}</text>
            }
        })
        .collect_view();
    view! {
        {weights}
        <line x1=format!("{}", Plot::LEFT) x2=format!("{}", Plot::WIDTH - Plot::RIGHT) y1=format!("{}", Plot::HEIGHT - Plot::BOTTOM) y2=format!("{}", Plot::HEIGHT - Plot::BOTTOM) class="stroke-slate-400" stroke-width="1" />
        {times}
    }
}

/// What the marks mean.
#[component]
fn Legend() -> impl IntoView {
    view! {
        <ul class="flex flex-wrap gap-4 text-xs text-slate-600" aria-label="Legend" data-testid="legend">
            <li class="flex items-center gap-1"><span class="inline-block h-2.5 w-2.5 rounded-full bg-sky-700"></span>"accepted"</li>
            <li class="flex items-center gap-1"><span class="inline-block h-2.5 w-2.5 rounded-full bg-violet-600"></span>"accepted as an override"</li>
            <li class="flex items-center gap-1"><span class="font-bold text-red-600">"×"</span>"rejected (duplicate, out of order, conflict, invalid)"</li>
            <li class="text-slate-500">"weights in kg, times in UTC"</li>
        </ul>
    }
}

/// The chart's data as a table, folded: every point and rejected attempt, in time order.
#[component]
fn DataAsTable(points: Vec<Point>, rejected: Vec<Rejected>) -> impl IntoView {
    let mut rows: Vec<(String, f64, String)> = points
        .into_iter()
        .map(|p| {
            let what = if p.overridden {
                "accepted (override)"
            } else {
                "accepted"
            };
            (p.timestamp, p.weight_kg, what.to_string())
        })
        .chain(rejected.into_iter().map(|r| {
            (
                r.timestamp,
                r.weight_kg,
                format!("rejected: {}", r.action.replace('_', " ")),
            )
        }))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let rows = rows
        .into_iter()
        .map(|(at, kg, what)| view! {
            <tr class="border-t border-slate-100"><td class="py-1"><Moment iso=at /></td><td class="py-1 text-right">{format!("{kg:.2}")}</td><td class="py-1">{what}</td></tr>
        })
        .collect_view();
    view! {
        <details class="mt-2 text-sm">
            <summary class="cursor-pointer text-sky-800">"The chart's data as a table"</summary>
            <DataTable label="Chart data" columns=&["Time", "Weight (kg)", "Outcome"] align_right=&["Weight (kg)"]>
                {rows}
            </DataTable>
        </details>
    }
}

/// Accepted measurements as dots (overrides in violet), each titled with its time and weight.
#[component]
fn Dots(points: Vec<Point>, plot: Plot) -> impl IntoView {
    points
        .into_iter()
        .filter_map(|p| {
            let t = parse_ms(&p.timestamp)?;
            let class = if p.overridden { "fill-violet-600" } else { "fill-sky-700" };
            Some(view! { <circle cx=format!("{:.1}", plot.x(t)) cy=format!("{:.1}", plot.y(p.weight_kg)) r="3" class=class><title>{format!("{} · {:.2} kg", p.timestamp, p.weight_kg)}</title></circle> })
        })
        .collect_view()
}

/// Rejected attempts as red crosses, each titled with its outcome, time and weight.
#[component]
fn Crosses(rejected: Vec<Rejected>, plot: Plot) -> impl IntoView {
    rejected
        .into_iter()
        .filter_map(|r| {
            let (cx, cy) = (plot.x(parse_ms(&r.timestamp)?), plot.y(r.weight_kg));
            Some(view! {
                <g class="stroke-red-600" stroke-width="2" data-testid="rejected-mark">
                    <title>{format!("{}: {} · {:.2} kg", r.action, r.timestamp, r.weight_kg)}</title>
                    <line x1=format!("{:.1}", cx - 4.0) y1=format!("{:.1}", cy - 4.0) x2=format!("{:.1}", cx + 4.0) y2=format!("{:.1}", cy + 4.0) />
                    <line x1=format!("{:.1}", cx - 4.0) y1=format!("{:.1}", cy + 4.0) x2=format!("{:.1}", cx + 4.0) y2=format!("{:.1}", cy - 4.0) />
                </g>
            })
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_time_axis_reads_day_month_and_time() {
        // 2025-11-26T08:01:02Z
        assert_eq!(super::short_time(1_764_144_062_123), "26 Nov 08:01");
    }
}
