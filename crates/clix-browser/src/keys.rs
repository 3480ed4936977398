//! Key names `browser press` takes, as CDP key events.

use serde_json::{Value, json};

/// `(name, code, windowsVirtualKeyCode, text typed)` of the named keys.
const NAMED: &[(&str, &str, i64, &str)] = &[
    ("Enter", "Enter", 13, "\r"),
    ("Tab", "Tab", 9, ""),
    ("Escape", "Escape", 27, ""),
    ("Backspace", "Backspace", 8, ""),
    ("Delete", "Delete", 46, ""),
    ("Space", "Space", 32, " "),
    ("ArrowUp", "ArrowUp", 38, ""),
    ("ArrowDown", "ArrowDown", 40, ""),
    ("ArrowLeft", "ArrowLeft", 37, ""),
    ("ArrowRight", "ArrowRight", 39, ""),
    ("Home", "Home", 36, ""),
    ("End", "End", 35, ""),
    ("PageUp", "PageUp", 33, ""),
    ("PageDown", "PageDown", 34, ""),
];

/// The key-down and key-up events of `name` (case-insensitive; `Esc`,
/// `Return` and `Up`/`Down`/`Left`/`Right` too), or of one character.
pub(crate) fn key_event(name: &str) -> Option<(Value, Value)> {
    let canonical = match name.to_ascii_lowercase().as_str() {
        "esc" => "Escape".to_string(),
        "return" => "Enter".to_string(),
        "up" | "down" | "left" | "right" => {
            let n = name.to_ascii_lowercase();
            format!("Arrow{}{}", n[..1].to_uppercase(), &n[1..])
        }
        _ => name.to_string(),
    };
    if let Some(&(key, code, vk, text)) = NAMED.iter().find(|(k, ..)| k.eq_ignore_ascii_case(&canonical)) {
        let kind = if text.is_empty() { "rawKeyDown" } else { "keyDown" };
        let mut down =
            json!({"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk});
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        let up =
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk});
        return Some((down, up));
    }
    let mut chars = name.chars();
    let (Some(ch), None) = (chars.next(), chars.next()) else { return None };
    let key = ch.to_string();
    Some((json!({"type": "keyDown", "key": key, "text": key}), json!({"type": "keyUp", "key": key})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_characters() {
        let (down, _) = key_event("enter").unwrap();
        assert_eq!(down["text"], "\r");
        assert_eq!(down["windowsVirtualKeyCode"], 13);
        assert_eq!(key_event("Esc").unwrap().0["key"], "Escape");
        assert_eq!(key_event("down").unwrap().0["key"], "ArrowDown");
        assert_eq!(key_event("Tab").unwrap().0["type"], "rawKeyDown");
        assert_eq!(key_event("x").unwrap().0["text"], "x");
        assert!(key_event("Hyper").is_none());
        assert!(key_event("").is_none());
    }
}
