//! SVG plots of a run (plotters, SVG backend only).

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn e<E: std::fmt::Debug>(path: &Path) -> impl FnOnce(E) -> anyhow::Error + '_ {
    move |err| anyhow!("{}: drawing: {err:?}", path.display())
}

/// Seek footprint: one panel per tool, disk offset (MiB) of each read
/// request against time since the first request (s).
pub fn footprint(path: &Path, title: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<()> {
    let n = series.len().max(1);
    let root = SVGBackend::new(path, (1000, 220 * n as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(e(path))?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(e(path))?;
    let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0f64, f64::max);
    let panels = root.split_evenly((n, 1));
    for (i, (panel, (name, pts))) in panels.iter().zip(series).enumerate() {
        let xmax = pts.iter().map(|p| p.0).fold(0.001f64, f64::max);
        let mut chart = ChartBuilder::on(panel)
            .caption(name, ("sans-serif", 14))
            .margin(6)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..xmax * 1.02, 0f64..ymax * 1.02)
            .map_err(e(path))?;
        chart
            .configure_mesh()
            .x_desc("time since first request (s)")
            .y_desc("offset (MiB)")
            .light_line_style(WHITE)
            .draw()
            .map_err(e(path))?;
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(thin(pts, xmax, ymax).into_iter().map(|(x, y)| Circle::new((x, y), 1, c.filled())))
            .map_err(e(path))?;
    }
    root.present().map_err(e(path))?;
    Ok(())
}

/// Keeps one point per cell of a 600 x 180 grid, so a trace of a million
/// requests still makes an SVG of reasonable size; the footprint's shape
/// (where the head went, and when) is unchanged at plot resolution.
pub fn thin(pts: &[(f64, f64)], xmax: f64, ymax: f64) -> Vec<(f64, f64)> {
    let (gx, gy) = (600.0, 180.0);
    let mut seen = std::collections::HashSet::new();
    pts.iter()
        .copied()
        .filter(|&(x, y)| {
            let cx = (x / xmax.max(1e-9) * gx) as i64;
            let cy = (y / ymax.max(1e-9) * gy) as i64;
            seen.insert((cx, cy))
        })
        .collect()
}

/// Grouped bars: for each tool, one bar per measure (e.g. modelled time,
/// one-sweep bound, single-file bound, measured wall time), in seconds.
pub fn bars(path: &Path, title: &str, measures: &[&str], tools: &[(String, Vec<f64>)]) -> Result<()> {
    let root = SVGBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(e(path))?;
    let ymax = tools.iter().flat_map(|t| t.1.iter().copied()).fold(0.001f64, f64::max);
    let n = tools.len().max(1);
    let names: Vec<String> = tools.iter().map(|t| t.0.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax * 1.1)
        .map_err(e(path))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.26 && i < names.len() { names[i].clone() } else { String::new() }
        })
        .y_desc("seconds")
        .draw()
        .map_err(e(path))?;
    let m = measures.len().max(1) as f64;
    let w = 0.8 / m;
    for (j, label) in measures.iter().enumerate() {
        let c = COLORS[j % COLORS.len()];
        chart
            .draw_series(tools.iter().enumerate().filter_map(|(i, t)| {
                let v = *t.1.get(j)?;
                let x0 = i as f64 + 0.1 + j as f64 * w;
                Some(Rectangle::new([(x0, 0.0), (x0 + w * 0.9, v)], c.filled()))
            }))
            .map_err(e(path))?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(e(path))?;
    root.present().map_err(e(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_one_point_per_cell_and_the_extremes() {
        let pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64 / 1e5, (i % 7) as f64)).collect();
        let t = thin(&pts, 1.0, 6.0);
        assert!(t.len() <= 600 * 181 && t.len() < pts.len());
        assert_eq!(t[0], pts[0]);
        // Every distinct offset row is still present.
        for k in 0..7 {
            assert!(t.iter().any(|p| p.1 == k as f64));
        }
    }

    #[test]
    fn writes_svg_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f.svg");
        footprint(&f, "t", &[("a".into(), vec![(0.0, 1.0), (1.0, 2.0)]), ("b".into(), vec![])]).unwrap();
        let s = std::fs::read_to_string(&f).unwrap();
        assert!(s.starts_with("<svg") && s.matches("<circle").count() == 2);
        let b = dir.path().join("b.svg");
        bars(&b, "t", &["x", "y"], &[("tool-a".into(), vec![1.0, 2.0])]).unwrap();
        let s = std::fs::read_to_string(&b).unwrap();
        assert!(s.matches("<rect").count() >= 3 && s.contains("\ntool-a\n"));
    }
}
