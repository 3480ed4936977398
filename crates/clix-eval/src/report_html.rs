//! `report.html`: one self-contained page (no script, no fetch) with the
//! summary, the pass rates per category, and a grid of design × task whose
//! cells link to each attempt's replay.

use std::collections::BTreeSet;

use crate::report::{AttemptRecord, Results};

/// The page for `results`; `link` gives the address of an attempt's replay
/// (relative to the page), when it has one.
pub fn html(results: &Results, link: &dyn Fn(&AttemptRecord) -> Option<String>) -> String {
    let mut body = String::new();
    let model = results.model.as_deref().unwrap_or("reference solutions (no model)");
    body.push_str(&format!(
        "<h1>clix eval</h1><p>{} · suites: {} · {} attempts</p>",
        esc(model),
        esc(&results.suites.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")),
        results.attempts.len()
    ));
    body.push_str(&summary_table(results));
    body.push_str(&category_table(results));
    body.push_str(&grid(results, link));
    if !results.skipped.is_empty() {
        body.push_str("<h2>Not run</h2><ul>");
        for s in &results.skipped {
            let design = s.design.map_or("every design".into(), |d| d.to_string());
            body.push_str(&format!("<li>{} in {design}: {}</li>", esc(&s.task), esc(&s.reason)));
        }
        body.push_str("</ul>");
    }
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>clix eval: {}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:2em;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ddd;padding:.25em .6em;text-align:left}}\
         th{{background:#f4f4f4}}td.num{{text-align:right}}\
         a.cell{{display:inline-block;min-width:1.6em;text-align:center;margin:1px;padding:0 .2em;\
         border-radius:3px;text-decoration:none;color:#fff}}\
         .pass{{background:#2a8f3c}}.fail{{background:#c0392b}}.error{{background:#777}}\
         small{{color:#777}}</style></head><body>{body}</body></html>\n",
        esc(model)
    )
}

fn summary_table(results: &Results) -> String {
    let mut out = String::from(
        "<h2>Summary</h2><table><tr><th>design</th><th>tasks</th><th>passed</th><th>pass rate (95% CI)</th>\
         <th>mean score</th><th>tokens/task</th><th>tool-result bytes/task</th><th>steps/task</th>\
         <th>wall p50</th></tr>",
    );
    for s in results.summary.iter().filter(|s| s.category.is_none()) {
        let tokens = s.tokens_per_task.map_or("–".into(), |t| format!("{t:.0}"));
        out.push_str(&format!(
            "<tr><td>{}</td><td class=num>{}</td><td class=num>{}/{}</td><td>{:.0}% ({:.0}–{:.0}%)</td>\
             <td class=num>{:.2}</td><td class=num>{tokens}</td><td class=num>{:.0}</td><td class=num>{:.1}</td>\
             <td class=num>{:.1} s</td></tr>",
            s.design,
            s.tasks,
            s.passed,
            s.attempts,
            100.0 * s.pass_rate,
            100.0 * s.pass_rate_ci95.0,
            100.0 * s.pass_rate_ci95.1,
            s.mean_score,
            s.tool_result_bytes_per_task,
            s.steps_per_task,
            s.wall_ms_p50 / 1000.0
        ));
    }
    out.push_str("</table>");
    out
}

fn category_table(results: &Results) -> String {
    let categories: BTreeSet<&str> = results.summary.iter().filter_map(|s| s.category.as_deref()).collect();
    let mut out = String::from("<h2>Per category</h2><table><tr><th>category</th>");
    for d in &results.designs {
        out.push_str(&format!("<th>{d}</th>"));
    }
    out.push_str("</tr>");
    for category in categories {
        out.push_str(&format!("<tr><td>{}</td>", esc(category)));
        for d in &results.designs {
            let cell = results
                .summary
                .iter()
                .find(|s| s.design == *d && s.category.as_deref() == Some(category))
                .map_or("–".into(), |s| format!("{}/{}", s.passed, s.attempts));
            out.push_str(&format!("<td class=num>{cell}</td>"));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// Design × task, one coloured box per attempt, linked to its replay; the
/// failed checks (or the error) in its tooltip.
fn grid(results: &Results, link: &dyn Fn(&AttemptRecord) -> Option<String>) -> String {
    let mut tasks: Vec<(&str, &str)> = Vec::new();
    for r in &results.attempts {
        if !tasks.iter().any(|(t, _)| *t == r.task) {
            tasks.push((&r.task, &r.category));
        }
    }
    let mut out = String::from("<h2>Tasks</h2><table><tr><th>task</th><th>category</th>");
    for d in &results.designs {
        out.push_str(&format!("<th>{d}</th>"));
    }
    out.push_str("</tr>");
    for (task, category) in tasks {
        out.push_str(&format!("<tr><td>{}</td><td><small>{}</small></td>", esc(task), esc(category)));
        for d in &results.designs {
            out.push_str("<td>");
            for r in results.attempts.iter().filter(|r| r.task == task && r.design == *d) {
                out.push_str(&cell(r, link(r)));
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn cell(r: &AttemptRecord, href: Option<String>) -> String {
    let class = if r.passed {
        "pass"
    } else if r.stop_reason.error().is_some() {
        "error"
    } else {
        "fail"
    };
    let mut why: Vec<String> = r.error.iter().cloned().collect();
    why.extend(r.checks.iter().filter(|c| !c.passed).map(|c| format!("{} ({})", c.check, c.detail)));
    let title = format!(
        "repeat {} · score {:.2} · {} steps · {}{}",
        r.repeat,
        r.score,
        r.steps,
        r.stop_reason,
        if why.is_empty() { String::new() } else { format!("\n{}", why.join("\n")) }
    );
    let mark = if r.passed { "✓" } else { "✗" };
    let href = href.map(|h| format!(" href=\"{}\"", esc(&h))).unwrap_or_default();
    format!("<a class=\"cell {class}\"{href} title=\"{}\">{mark}</a>", esc(&title))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designs::Design;
    use crate::report::tests::{record, results};

    #[test]
    fn the_grid_links_each_attempt_and_colours_it() {
        let mut failed = record("b<x>", "json", Design::Bash, 0, false, 10);
        failed.error = Some("the attempt's 60s ran out".into());
        let r = results(vec![record("a", "text", Design::Run, 0, true, 10), failed]);
        let page = html(&r, &|r| Some(format!("runs/{}-{}.html", r.task, r.design)));
        assert!(page.starts_with("<!doctype html>") && page.ends_with("</html>\n"));
        assert!(!page.contains("<script") && !page.contains("src=\"http"), "self-contained");
        assert!(page.contains("<a class=\"cell pass\" href=\"runs/a-run.html\""), "{page}");
        assert!(page.contains("<a class=\"cell fail\" href=\"runs/b&lt;x&gt;-bash.html\""), "escaped: {page}");
        assert!(page.contains("solution_done\nthe attempt's 60s ran out\">✗</a>"), "the reason is in the tooltip");
        assert!(page.contains("<td>run</td><td class=num>1</td><td class=num>1/1</td><td>100% (21–100%)</td>"));
    }
}
