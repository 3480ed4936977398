//! The session's summary for memory: what a later session in this folder
//! would want to know, written by the model when the session ends.

use super::Agent;
use crate::context::transcript;
use crate::events::Event;
use crate::memory::AgentMemory;
use crate::tools::Tools;

/// The most of a session's log sent to be summarized for memory.
const SUMMARY_INPUT_CHARS: usize = 24_000;

/// Why a session's summary is not in memory (the work itself is saved).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    /// The model call failed.
    #[error("the model could not summarize the session: {0}")]
    Model(String),
    /// The model wrote nothing.
    #[error("the model's summary of the session was empty")]
    Empty,
    /// The memory store refused it.
    #[error("{0}")]
    Store(String),
}

impl<T: Tools> Agent<'_, T> {
    /// Ends a session: the model writes a 1–3 sentence summary of it, kept
    /// in memory as kind `summary` in the session's topic. Nothing happens
    /// (`Ok(None)`) without a memory, with summaries off, or when no run
    /// reached a model (none configured, none reachable, interrupted).
    pub async fn remember(&mut self, on_event: &mut dyn FnMut(&Event)) -> Result<Option<i64>, SummaryError> {
        if !self.worked || !self.memory.as_ref().is_some_and(AgentMemory::summaries) {
            return Ok(None);
        }
        let log = transcript(self.messages.get(1..).unwrap_or_default());
        // The end of a long session matters most; keep its last part.
        let start = log.len().saturating_sub(SUMMARY_INPUT_CHARS);
        let start = (start..log.len()).find(|i| log.is_char_boundary(*i)).unwrap_or(log.len());
        let prompt = format!(
            "Here is the session's log.\n\n{}\n\nIn 1 to 3 sentences, write what a later session in this \
             folder would want to know: what was asked, what was done or found (exact names, paths, numbers), \
             what is left. Plain text, no preamble.",
            &log[start..]
        );
        let system = "You summarize an agent's finished session for its long-term memory.";
        let (text, usage) =
            self.ask_aside(system, prompt, 300).await.map_err(|why| SummaryError::Model(why.to_string()))?;
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err(SummaryError::Empty);
        }
        let session = self.run_id().unwrap_or_default().to_string();
        let Some(memory) = self.memory.as_mut() else { return Ok(None) };
        let stored = memory.store_summary(&text, &session).await;
        self.report_memory_problems(on_event);
        let id = stored.map_err(SummaryError::Store)?;
        let cost = self.cost_of(&usage);
        self.emit(on_event, Event::Remembered { id, kind: "summary".into(), text, usage, cost });
        Ok(Some(id))
    }
}
