//! A run as people read it: its tokens and cost in one line
//! ([`usage_text`]), and its trajectory as one self-contained HTML page,
//! images inline (`clix replay <id> --html`, an eval's replays); for a plan
//! (`clix replay .clix/plan-result.json --html`), one page with a lane per
//! agent. Strings only: where they go is the caller's.

use crate::Event;
use crate::trajectory::Record;

/// A run's page: each record the page shows, in order.
pub fn html_page(id: &str, records: &[Record], currency: &str) -> String {
    let mut body = String::new();
    for item in records.iter().filter_map(|r| item(r, currency)) {
        body.push_str(&item);
        body.push('\n');
    }
    page(&format!("clix run {id}"), "max-width:960px", &body)
}

/// One agent of a plan: its task id, how it ended, and its trajectory.
pub struct Lane {
    /// The task's id.
    pub task: String,
    /// How it ended.
    pub status: String,
    /// Its trajectory (empty when it did not run).
    pub records: Vec<Record>,
}

/// A plan as one page: a lane per agent, side by side, each event marked
/// with its time since the plan's first event so lanes can be compared.
pub fn plan_page(plan: &str, lanes: &[Lane], currency: &str) -> String {
    let start = lanes.iter().filter_map(|l| l.records.first()).map(|r| r.ts_ms).min().unwrap_or(0);
    let mut body = String::from("<div class=lanes>");
    for lane in lanes {
        body.push_str(&format!(
            "<section class=lane><h2>{} <small>{}</small></h2>",
            esc(&lane.task),
            esc(&lane.status)
        ));
        for r in &lane.records {
            if let Some(item) = item(r, currency) {
                let at = r.ts_ms.saturating_sub(start) as f64 / 1000.0;
                body.push_str(&format!("<small>+{at:.1}s</small>{item}\n"));
            }
        }
        if lane.records.is_empty() {
            body.push_str("<p><small>no trajectory (not run)</small></p>");
        }
        body.push_str("</section>");
    }
    body.push_str("</div>");
    page(&format!("clix plan {plan}"), "margin:1em", &body)
}

/// One trajectory record as HTML, or `None` for what a page does not show.
/// The model's text is drawn from its Markdown; the run's end shows how it
/// ended, not the answer again (the model's last text is it).
fn item(r: &Record, currency: &str) -> Option<String> {
    {
        let item = match &r.event {
            Event::Start { task, model, provider, workspace, .. } => format!(
                "<div class=start><b>Task</b><pre>{}</pre><small>{} · {} · {}</small></div>",
                esc(task),
                esc(model),
                esc(provider),
                esc(workspace)
            ),
            Event::Context { system, tools, messages } => {
                let tools: Vec<String> = tools.iter().map(|t| format!("{}: {}", t.name, t.description)).collect();
                format!(
                    "<details class=note><summary><small>what the model was given: the system prompt, the tool, \
                     {} messages</small></summary><pre>{}</pre><pre>{}</pre></details>",
                    messages.len(),
                    esc(system),
                    esc(&tools.join("\n\n"))
                )
            }
            Event::Response { step, text, .. } if !text.is_empty() => {
                format!(
                    "<div class=model><small>step {step} · model</small>{}</div>",
                    clix_markdown::to_safe_html(text)
                )
            }
            Event::ToolCall { step, tool, command, stdin, .. } => format!(
                "<div class=call><small>step {step} · {}</small><pre>$ {}</pre>{}</div>",
                esc(tool),
                esc(command),
                stdin.as_deref().map(|s| format!("<pre class=stdin>{}</pre>", esc(s))).unwrap_or_default()
            ),
            Event::ToolResult { text, exit_code, images, .. } => {
                let imgs: String = images
                    .iter()
                    .map(|i| format!("<img alt=\"image from see\" src=\"data:{};base64,{}\">", esc(&i.mime), i.data))
                    .collect();
                let class = if *exit_code == 0 { "result" } else { "result failed" };
                format!("<div class=\"{class}\"><pre>{}</pre>{imgs}</div>", esc(text))
            }
            Event::Compacted { summary, messages_removed, .. } => format!(
                "<div class=note><small>summarized {messages_removed} earlier messages</small><pre>{}</pre></div>",
                esc(summary)
            ),
            Event::Retry { attempt, error, .. } => {
                format!("<div class=note><small>retry {attempt}: {}</small></div>", esc(error))
            }
            Event::Error { message } => format!("<div class=\"note failed\"><pre>{}</pre></div>", esc(message)),
            Event::Annotation { name, value } => format!(
                "<details class=note><summary><small>{}</small></summary><pre>{}</pre></details>",
                esc(name),
                esc(&serde_json::to_string_pretty(value).unwrap_or_default())
            ),
            Event::Done { stop_reason, steps, usage, cost, .. } => format!(
                "<div class=done><b>{}</b> after {steps} steps · {}</div>",
                esc(&stop_reason.to_string()),
                esc(&usage_text(usage, *cost, currency)),
            ),
            _ => return None,
        };
        Some(item)
    }
}

fn page(title: &str, body_style: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{title}</title><style>\
         body{{font:14px system-ui,sans-serif;{body_style};margin-left:auto;margin-right:auto;color:#222}}\
         .lanes{{display:flex;gap:1em;align-items:flex-start;overflow-x:auto}}\
         .lane{{flex:1 0 320px;max-width:480px}}.lane h2{{font-size:16px}}\
         div,details{{border-left:4px solid #ccc;padding:.3em .8em;margin:.6em 0}}\
         pre{{white-space:pre-wrap;margin:.3em 0;font:13px ui-monospace,monospace}}\
         .start{{border-color:#36c}}.model{{border-color:#7a4}}.call{{border-color:#888;background:#f6f6f6}}\
         .result{{border-color:#bbb}}.failed{{border-color:#c33}}.done{{border-color:#36c;background:#eef3ff}}\
         img{{max-width:100%;border:1px solid #ddd}}small{{color:#777}}\
         </style></head><body><h1>{}</h1>\n{body}</body></html>\n",
        esc(title),
        title = esc(title)
    )
}

/// A run's tokens as people read them, its input's cached part apart, and
/// its cost when the model has prices (`agent.prices`):
/// `12.4k in (9.8k cached) / 310 out tokens, cost 0.0123`.
pub fn usage_text(usage: &crate::Usage, cost: Option<f64>, currency: &str) -> String {
    let count = |n: u64| match n {
        0..10_000 => n.to_string(),
        10_000..10_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    };
    let mut cached = Vec::new();
    if usage.cache_read_tokens > 0 {
        cached.push(format!("{} cached", count(usage.cache_read_tokens)));
    }
    if usage.cache_write_tokens > 0 {
        cached.push(format!("{} written to the cache", count(usage.cache_write_tokens)));
    }
    let cached = if cached.is_empty() { String::new() } else { format!(" ({})", cached.join(", ")) };
    let mut text = format!("{} in{cached} / {} out tokens", count(usage.input_tokens), count(usage.output_tokens));
    if let Some(cost) = cost {
        // Four decimals hide a cheap run's cost; six show it.
        text.push_str(&format!(", cost {}", money(cost, currency)));
    }
    text
}

/// A cost as people read it, with its currency: four decimals hide a cheap
/// run's cost, so below a cent six are shown.
pub fn money(cost: f64, currency: &str) -> String {
    if cost >= 0.01 { format!("{cost:.4} {currency}") } else { format!("{cost:.6} {currency}") }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StopReason, Usage};

    /// Tokens read as counts (thousands past 10,000), the cache's part only
    /// when there is one, the cost only when priced.
    #[test]
    fn a_run_s_tokens_and_cost_read_as_people_read_them() {
        let usage = |input, output, read, write| Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        };
        let rows = [
            (usage(30, 14, 0, 0), None, "30 in / 14 out tokens"),
            (usage(5982, 130, 5690, 0), Some(0.000138), "5982 in (5690 cached) / 130 out tokens, cost 0.000138 USD"),
            (
                usage(41_230, 1_310, 38_000, 2_100),
                Some(0.0421),
                "41.2k in (38.0k cached, 2100 written to the cache) / 1310 out tokens, cost 0.0421 USD",
            ),
            (usage(12_000_000, 0, 0, 0), Some(0.0), "12.0M in / 0 out tokens, cost 0.000000 USD"),
        ];
        for (usage, cost, want) in rows {
            assert_eq!(usage_text(&usage, cost, "USD"), want);
        }
    }

    /// The model's Markdown is drawn, its HTML shown as text, its links
    /// kept to the web, its images made links; the answer shows once.
    #[test]
    fn the_model_s_markdown_is_drawn_safely_and_the_answer_shown_once() {
        let answer = "# Found\n**three** lines <script>alert(1)</script> [x](javascript:alert(1)) \
                      [docs](https://example.com/d) ![pic](http://example.com/p.png)";
        let records = [
            Event::Response { step: 1, text: answer.into(), tool_calls: vec![], usage: Usage::default() },
            Event::Done {
                stop_reason: StopReason::Answered,
                answer: answer.into(),
                steps: 1,
                usage: Usage::default(),
                cost: Some(0.5),
            },
        ]
        .map(|event| Record { ts_ms: 1, event });
        let html = html_page("r", &records, "EUR");
        for want in [
            "<h1>Found</h1>",
            "<strong>three</strong>",
            "&lt;script&gt;",
            "href=\"https://example.com/d\"",
            "cost 0.5000 EUR",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        assert!(!html.contains("<script>alert") && !html.contains("javascript:") && !html.contains("<img"), "{html}");
        assert_eq!(html.matches("<strong>three</strong>").count() + html.matches("**three**").count(), 1, "{html}");
    }
}
