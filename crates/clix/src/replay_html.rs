//! `clix replay <id> --html`: one self-contained page per run, images inline.

use clix_agent::Event;
use clix_agent::trajectory::Record;

pub(crate) fn render(id: &str, records: &[Record]) -> String {
    let mut body = String::new();
    for r in records {
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
                format!("<div class=model><small>step {step} · model</small><pre>{}</pre></div>", esc(text))
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
            Event::Compacted { summary, messages_removed } => format!(
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
            Event::Done { stop_reason, answer, steps, input_tokens, output_tokens } => format!(
                "<div class=done><b>{}</b> after {steps} steps · {input_tokens} in / {output_tokens} out tokens<pre>{}</pre></div>",
                esc(stop_reason),
                esc(answer)
            ),
            _ => continue,
        };
        body.push_str(&item);
        body.push('\n');
    }
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>clix run {id}</title><style>\
         body{{font:14px system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}}\
         div,details{{border-left:4px solid #ccc;padding:.3em .8em;margin:.6em 0}}\
         pre{{white-space:pre-wrap;margin:.3em 0;font:13px ui-monospace,monospace}}\
         .start{{border-color:#36c}}.model{{border-color:#7a4}}.call{{border-color:#888;background:#f6f6f6}}\
         .result{{border-color:#bbb}}.failed{{border-color:#c33}}.done{{border-color:#36c;background:#eef3ff}}\
         img{{max-width:100%;border:1px solid #ddd}}small{{color:#777}}\
         </style></head><body><h1>clix run {}</h1>\n{body}</body></html>\n",
        esc(id)
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
