//! A run's events as a person sees them: the model's text drawn on
//! stdout, each call and result a dim line on stderr, a spinner while the
//! model or a command works; or, with `--jsonl`, the event stream.

use std::io::{IsTerminal, Write};
use std::path::Path;

use clix_agent::replay::usage_text;
use clix_agent::stream::{RunResult, StreamWriter};
use clix_agent::{Event, RunSummary, StopReason};

use crate::answer::Answer;
use crate::outln;
use crate::text::one_line;

/// Turns events into terminal text or stream lines.
pub struct Renderer {
    /// With `--jsonl`: the stream the events become.
    stream: Option<StreamWriter>,
    /// The last thing printed on stdout was streamed model text without a newline.
    mid_text: bool,
    color: bool,
    /// Shown on a terminal while the model or a command works.
    spinner: Option<indicatif::ProgressBar>,
    interactive: bool,
    /// The model's text drawn as Markdown, or as written.
    answer: Answer,
    /// The currency costs are shown in (`agent.currency`).
    currency: String,
}

impl Renderer {
    /// A renderer for a run shown on stdout and stderr, or as `--jsonl` lines.
    pub fn new(jsonl: bool, currency: &str) -> Self {
        let interactive = !jsonl && std::io::stderr().is_terminal();
        let color = interactive && std::env::var_os("NO_COLOR").is_none();
        let stream = jsonl.then(|| StreamWriter::new(String::new(), None));
        let currency = currency.to_string();
        let answer = Answer::for_stdout(jsonl);
        Renderer { stream, mid_text: false, color, spinner: None, interactive, answer, currency }
    }

    fn spin(&mut self, message: &str) {
        self.stop_spinner();
        if self.interactive {
            let bar = indicatif::ProgressBar::new_spinner().with_message(message.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            crate::ask::set_spinner(Some(bar.clone()));
            self.spinner = Some(bar);
        }
    }

    /// Takes the spinner off the screen.
    pub fn stop_spinner(&mut self) {
        if let Some(bar) = self.spinner.take() {
            crate::ask::set_spinner(None);
            bar.finish_and_clear();
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.color { format!("\x1b[2m{s}\x1b[0m") } else { s.to_string() }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) {
        if let Some(stream) = &mut self.stream {
            if let Event::Start { run_id, .. } = event {
                stream.set_agent_id(run_id.clone());
            }
            if let Some(line) = stream.event(event) {
                print_line(&line);
            }
            return;
        }
        let mut out = std::io::stdout();
        self.stop_spinner();
        match event {
            Event::Text { text } => {
                let text = self.answer.show(text);
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.mid_text = !text.ends_with('\n');
            }
            Event::ToolCall { tool, command, .. } => {
                self.end_text();
                eprintln!("{}", self.dim(&format!("▸ {tool} {}", one_line(command, 120))));
                self.spin("running…");
            }
            Event::ToolResult { text, changes, declined, .. } => {
                let footer = text.lines().last().unwrap_or_default();
                let first = text.lines().next().filter(|l| *l != footer).map(|l| format!(" {}", one_line(l, 80)));
                eprintln!("{}", self.dim(&format!("  {footer}{}", first.unwrap_or_default())));
                if let Some(line) = changes_line(changes.as_ref(), *declined) {
                    eprintln!("{}", self.dim(&format!("  {line}")));
                }
                self.spin("thinking…");
            }
            Event::Retry { attempt, wait_ms, error } => {
                eprintln!("{}", self.dim(&format!("  retry {attempt} in {wait_ms}ms: {error}")));
                self.spin("thinking…");
            }
            Event::Compacted { messages_removed, .. } => {
                eprintln!("{}", self.dim(&format!("  (summarized {messages_removed} earlier messages)")));
                self.spin("thinking…");
            }
            Event::Error { message } => {
                self.end_text();
                // A provider's error may quote what its server sent.
                eprintln!("clix: {}", crate::text::visible(message));
            }
            Event::Recall { ids, .. } => {
                let ids: Vec<String> = ids.iter().map(|id| format!("#{id}")).collect();
                eprintln!("{}", self.dim(&format!("  (recalled from memory: {})", ids.join(" "))));
                self.spin("thinking…");
            }
            Event::Remembered { id, text, .. } => {
                self.end_text();
                eprintln!("{}", self.dim(&format!("  (remembered #{id}: {})", one_line(text, 100))));
            }
            Event::Start { .. } => self.spin("thinking…"),
            // What the model was given is for the trajectory (`clix replay --jsonl`), not the terminal.
            Event::Context { .. } | Event::Request { .. } | Event::Tail { .. } | Event::Annotation { .. } => {}
            Event::Response { .. } | Event::Usage { .. } | Event::Done { .. } => {}
        }
    }

    fn end_text(&mut self) {
        if std::mem::take(&mut self.mid_text) {
            let _ = outln("");
        }
    }

    /// With `--jsonl`, the run's last line.
    pub fn result(&mut self, result: &RunResult) {
        if let Some(stream) = &mut self.stream {
            print_line(&stream.result(result));
        }
    }

    /// The run's closing line: how it ended, its steps, tokens and cost, where it is saved.
    pub fn finish(&mut self, summary: &RunSummary, trajectory: &Path) {
        self.stop_spinner();
        if self.stream.is_some() {
            return;
        }
        self.end_text();
        let usage = usage_text(&summary.usage, summary.cost, &self.currency);
        let how = match &summary.stop_reason {
            StopReason::Answered => "done".to_string(),
            StopReason::Interrupted => format!("stopped by Ctrl-C at step {}", summary.steps),
            StopReason::MaxSteps => "stopped: step budget used up (--max-steps)".into(),
            StopReason::MaxTokens => "stopped: token budget used up (agent.max_total_tokens)".into(),
            StopReason::WallTime => "stopped: time budget used up (agent.max_wall_secs)".into(),
            StopReason::Error(_) => "failed".into(),
        };
        eprintln!(
            "{}",
            self.dim(&format!("— {how}; {} steps; {usage}; run saved: {}", summary.steps, trajectory.display()))
        );
        let stopped = [StopReason::MaxSteps, StopReason::MaxTokens, StopReason::WallTime, StopReason::Interrupted];
        if stopped.contains(&summary.stop_reason) {
            eprintln!("{}", self.dim("  to go on where it stopped: clix ask --continue \"what next\""));
        }
    }
}

/// One stream line on stdout. A reader that left (`| head -1`) ends no
/// run: the trajectory keeps it all.
pub fn print_line(line: &clix_agent::stream::StreamEvent) {
    if let Ok(text) = serde_json::to_string(line) {
        let _ = outln(text);
    }
}

/// What a call changed, in the line a person reads after it: the change
/// summary, or that the person declined the changes.
pub fn changes_line(changes: Option<&clix_engine::ChangeSet>, declined: bool) -> Option<String> {
    let summary = changes.and_then(clix_engine::ChangeSet::summary)?;
    Some(if declined { format!("declined, put back: {summary}") } else { summary })
}

/// `--show-prompt`: the system prompt and the tools as the first model
/// call would send them to `model` at `url` (a `kind` API).
pub fn shown_prompt(shown: &serde_json::Value, model: &str, url: &str, kind: &str) -> String {
    let system = match &shown["system"] {
        serde_json::Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let tools = serde_json::to_string_pretty(&shown["tools"]).unwrap_or_default();
    format!(
        "# system prompt (for model {model} at {url})\n{system}\n\n# tools (as the {kind} API is sent them)\n{tools}"
    )
}
