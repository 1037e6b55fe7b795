//! The benchmark's tables and its recall-vs-tokens curve (an SVG drawn here, no plotting
//! library).

/// Results of one way: per category, questions answered in full and asked; the request sizes.
pub struct Row {
    pub name: String,
    by_category: [(usize, usize); 5],
    tokens: Vec<u64>,
}

/// One point of a curve: a budget, the median request it gave, and the recall.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub budget: u32,
    pub median_tokens: u64,
    pub recall: f64,
}

const CATEGORIES: [(u8, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

impl Row {
    pub fn new(name: &str) -> Row {
        Row {
            name: name.to_string(),
            by_category: [(0, 0); 5],
            tokens: Vec::new(),
        }
    }

    /// Records one question.
    pub fn add(&mut self, category: u8, found: bool, tokens: u64) {
        let slot = &mut self.by_category[usize::from(category.min(4))];
        slot.0 += usize::from(found);
        slot.1 += 1;
        self.tokens.push(tokens);
    }

    fn total(&self) -> (usize, usize) {
        self.by_category
            .iter()
            .fold((0, 0), |acc, c| (acc.0 + c.0, acc.1 + c.1))
    }

    fn median(&self) -> u64 {
        let mut sorted = self.tokens.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or(0)
    }

    pub fn point(&self, budget: u32) -> Point {
        let (found, asked) = self.total();
        Point {
            budget,
            median_tokens: self.median(),
            recall: percent(found, asked),
        }
    }
}

fn percent(found: usize, asked: usize) -> f64 {
    if asked == 0 {
        0.0
    } else {
        found as f64 * 100.0 / asked as f64
    }
}

use ccm_core::compaction::report::thousands;

/// The per-category table of the ways at the default budgets.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from("| what the model reads |");
    let first = &rows[0];
    for (category, name) in CATEGORIES {
        out.push_str(&format!(
            " {name} ({}) |",
            first.by_category[usize::from(category)].1
        ));
    }
    out.push_str(" all |  median request (tokens) |\n|---|---|---|---|---|---|---|\n");
    for row in rows {
        out.push_str(&format!("| {} |", row.name));
        for (category, _) in CATEGORIES {
            let (found, asked) = row.by_category[usize::from(category)];
            out.push_str(&format!(" {:.1}% |", percent(found, asked)));
        }
        let (found, asked) = row.total();
        out.push_str(&format!(
            " **{:.1}%** | {} |\n",
            percent(found, asked),
            thousands(row.median())
        ));
    }
    out
}

/// The curves as a table: per series and budget, the median request and the recall.
pub fn curve_table(series: &[(String, Vec<Point>)]) -> String {
    let mut out =
        String::from("| series | budget | median request | all evidence |\n|---|---|---|---|\n");
    for (name, points) in series {
        for point in points {
            out.push_str(&format!(
                "| {name} | {} | {} | {:.1}% |\n",
                thousands(u64::from(point.budget)),
                thousands(point.median_tokens),
                point.recall
            ));
        }
    }
    out
}

/// The recall-vs-tokens curve as an SVG image.
pub fn svg(series: &[(String, Vec<Point>)]) -> String {
    const WIDTH: f64 = 720.0;
    const HEIGHT: f64 = 420.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 250.0;
    const TOP: f64 = 30.0;
    const BOTTOM: f64 = 50.0;
    const COLOURS: [&str; 6] = [
        "#1b6ac9", "#2e9e44", "#d9822b", "#8e44ad", "#7f8c8d", "#c0392b",
    ];
    let max_tokens = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.median_tokens))
        .max()
        .unwrap_or(1)
        .max(1000);
    let x_max = (max_tokens as f64 / 1000.0).ceil() * 1000.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |tokens: f64| LEFT + tokens / x_max * plot_w;
    let y = |recall: f64| TOP + (100.0 - recall) / 100.0 * plot_h;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"18\" font-size=\"14\">LoCoMo: questions with all evidence in the request, against its median size</text>\n"
    );
    for step in 0..=5 {
        let recall = f64::from(step) * 20.0;
        out.push_str(&format!(
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{recall:.0}%</text>\n",
            LEFT + plot_w,
            LEFT - 6.0,
            y(recall) + 4.0,
            y = y(recall)
        ));
    }
    let ticks = (x_max / 1000.0) as u64;
    for tick in 0..=ticks {
        let tokens = tick as f64 * 1000.0;
        out.push_str(&format!(
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            TOP + plot_h,
            TOP + plot_h + 16.0,
            thousands(tokens as u64),
            x = x(tokens)
        ));
    }
    out.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">median request (tokens, o200k_base)</text>\n",
        LEFT + plot_w / 2.0,
        HEIGHT - 12.0
    ));
    for (i, (name, points)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.median_tokens as f64), y(p.recall)))
            .collect();
        out.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        ));
        for p in points {
            out.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n",
                x(p.median_tokens as f64),
                y(p.recall)
            ));
        }
        let legend_y = TOP + 10.0 + i as f64 * 20.0;
        out.push_str(&format!(
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{legend_y:.1}\" y2=\"{legend_y:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            WIDTH - RIGHT + 15.0,
            WIDTH - RIGHT + 35.0,
            WIDTH - RIGHT + 40.0,
            legend_y + 4.0,
            name
        ));
    }
    out.push_str("</svg>\n");
    out
}
