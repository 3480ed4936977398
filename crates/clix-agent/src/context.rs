//! Keeping the conversation inside the model's context window.
//!
//! Tokens are estimated as one per 4 bytes of text plus a small overhead per
//! message and ~800 per image: no tokenizer crate matches every provider's
//! tokenizer, and when the provider reports real input usage the loop uses
//! that instead. Layer 2 already keeps tool results small (long outputs
//! arrive as a preview plus a spill-file pointer).

use crate::message::{Message, Role};

const BYTES_PER_TOKEN: usize = 4;
const MESSAGE_OVERHEAD: u64 = 4;
const IMAGE_TOKENS: u64 = 800;

pub(crate) fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let text = m.text.len() + m.tool_calls.iter().map(|c| c.arguments.len() + c.name.len()).sum::<usize>();
            (text / BYTES_PER_TOKEN) as u64 + MESSAGE_OVERHEAD + m.images.len() as u64 * IMAGE_TOKENS
        })
        .sum()
}

/// The range of messages to summarize: everything after the system prompt
/// and the task, up to the last `keep` messages, moved so the kept tail
/// starts with an assistant turn (a tool result must stay with its call).
/// `None` when there is nothing worth summarizing.
pub(crate) fn compactable(messages: &[Message], keep: usize) -> Option<std::ops::Range<usize>> {
    let head = messages.iter().take_while(|m| m.role == Role::System).count() + 1;
    let mut tail = messages.len().saturating_sub(keep.max(1));
    while tail > head && messages[tail].role != Role::Assistant {
        tail -= 1;
    }
    (tail > head + 1).then_some(head..tail)
}

/// The removed turns as plain text, for the model to summarize.
pub(crate) fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        match m.role {
            Role::Assistant => {
                if !m.text.is_empty() {
                    out.push_str(&format!("assistant: {}\n", m.text));
                }
                for c in &m.tool_calls {
                    out.push_str(&format!("assistant called run: {}\n", c.arguments));
                }
            }
            Role::Tool => out.push_str(&format!("result:\n{}\n", m.text)),
            Role::User => out.push_str(&format!("user: {}\n", m.text)),
            Role::System => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn assistant_call() -> Message {
        Message {
            tool_calls: vec![ToolCall { id: "c".into(), name: "run".into(), arguments: "{}".into() }],
            ..Message::new(Role::Assistant, "")
        }
    }

    #[test]
    fn the_kept_tail_starts_at_an_assistant_turn() {
        let mut m = vec![Message::new(Role::System, "s"), Message::new(Role::User, "task")];
        for _ in 0..5 {
            m.push(assistant_call());
            m.push(Message::tool_result("c", "out", false));
        }
        // 12 messages; keep 3 → tail would start at a tool result (index 9), moves to 8.
        assert_eq!(compactable(&m, 3), Some(2..8));
        assert_eq!(compactable(&m, 11), None);
        assert!(estimate_tokens(&m) > 0);
    }
}
