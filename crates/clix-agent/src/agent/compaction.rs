//! Compaction: near the context window, the oldest turns (after the system
//! prompt and the task, before the kept tail) are replaced by a summary.

use super::Agent;
use crate::context::{compactable, estimate_tokens, transcript};
use crate::events::Event;
use crate::message::{Message, Role};
use crate::tools::Tools;

impl<T: Tools> Agent<'_, T> {
    /// Summarizes the oldest turns when the conversation nears the window.
    pub(super) async fn compact_if_needed(&mut self, last_input_tokens: u64, on_event: &mut dyn FnMut(&Event)) {
        let used = last_input_tokens.max(estimate_tokens(&self.messages));
        let threshold = (self.settings.compact_at * self.settings.context_window as f64) as u64;
        if used < threshold {
            tracing::trace!(used_tokens = used, threshold_tokens = threshold, "context: no compaction needed");
            return;
        }
        let Some(range) = compactable(&self.messages, self.settings.keep_last_messages) else {
            tracing::debug!(
                used_tokens = used,
                threshold_tokens = threshold,
                keep_last_messages = self.settings.keep_last_messages,
                "context: over the threshold, but nothing older than the kept tail to compact"
            );
            return;
        };
        let old = transcript(&self.messages[range.clone()]);
        let prompt = format!(
            "Summarize these earlier steps in at most 15 lines: commands run, what they showed, files \
             changed, open questions. Keep exact paths, names and numbers.\n\n{old}"
        );
        let asked = self.ask_aside("You summarize an agent's work log for the agent itself.", prompt, 1024).await;
        let usage = asked.as_ref().map(|(_, usage)| *usage).unwrap_or_default();
        let (summary, by) = match asked {
            Ok((text, _)) if !text.trim().is_empty() => (text, "the model"),
            // Without a model summary, a mechanical one still saves the window.
            _ => (
                old.lines().filter(|l| l.starts_with("assistant called run")).collect::<Vec<_>>().join("\n"),
                "the commands run (the model gave no summary)",
            ),
        };
        let removed = range.len();
        let messages_before = self.messages.len();
        self.messages.splice(range, [Message::new(Role::User, format!("[summary of earlier steps]\n{summary}"))]);
        tracing::debug!(
            tokens_before = used,
            tokens_after = estimate_tokens(&self.messages),
            threshold_tokens = threshold,
            context_window = self.settings.context_window,
            messages_before,
            messages_after = self.messages.len(),
            messages_removed = removed,
            summary_by = by,
            summary_chars = summary.chars().count(),
            "context compacted: the oldest turns replaced by a summary (tokens_after is estimated)"
        );
        let cost = self.cost_of(&usage);
        self.emit(on_event, Event::Compacted { messages_removed: removed, summary, usage, cost });
        // The conversation changed in its middle: the trajectory gets it whole again.
        self.record_context(on_event);
    }
}
