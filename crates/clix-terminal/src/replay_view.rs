//! `clix replay` as a person reads it: a run's task, the model's words,
//! each call and its result; a plan's lanes, a task each.

use clix_agent::Event;
use clix_agent::replay::{Lane, usage_text};
use clix_agent::trajectory::Record;

use crate::outln;
use crate::render::{Renderer, changes_line};

/// One run's records, as a person reads them.
pub fn show_run(records: &[Record], currency: &str) -> std::io::Result<()> {
    let mut render = Renderer::new(false, currency);
    for r in records {
        match &r.event {
            Event::Start { task, model, .. } => outln(format_args!("# task ({model}): {task}"))?,
            Event::Response { text, .. } if !text.is_empty() => outln(text)?,
            Event::ToolCall { tool, command, .. } => outln(format_args!("▸ {tool} {command}"))?,
            Event::ToolResult { text, changes, declined, .. } => {
                outln(text)?;
                if let Some(line) = changes_line(changes.as_ref(), *declined) {
                    outln(format_args!("  {line}"))?;
                }
            }
            Event::Done { stop_reason, steps, usage, cost, .. } => {
                outln(format_args!("# {stop_reason} after {steps} steps; {}", usage_text(usage, *cost, currency)))?
            }
            other => render.event(other),
        }
    }
    Ok(())
}

/// A plan's lanes: each task's calls and how it ended, or its records as JSON lines.
pub fn show_lanes(lanes: &[Lane], jsonl: bool) -> std::io::Result<()> {
    for lane in lanes {
        outln(format_args!("## {} ({})", lane.task, lane.status))?;
        for r in &lane.records {
            if jsonl {
                outln(serde_json::to_string(r).map_err(std::io::Error::other)?)?;
            } else if let Event::ToolCall { command, .. } = &r.event {
                outln(format_args!("▸ {command}"))?;
            } else if let Event::Done { stop_reason, answer, .. } = &r.event {
                outln(format_args!("# {stop_reason}: {answer}"))?;
            }
        }
    }
    Ok(())
}
