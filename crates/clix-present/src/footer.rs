//! The `[exit:N | 12ms]` footer every result ends with.

use std::time::Duration;

/// Whole milliseconds below one second (`0ms`, `12ms`), seconds with one
/// decimal from one second up (`1.2s`).
pub(crate) fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 { format!("{ms}ms") } else { format!("{:.1}s", d.as_secs_f64()) }
}

/// The last line of every presentation.
pub fn footer(exit_code: i32, duration: Duration) -> String {
    format!("[exit:{exit_code} | {}]", format_duration(duration))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases = [
            (0, 0, "[exit:0 | 0ms]"),
            (0, 12, "[exit:0 | 12ms]"),
            (1, 999, "[exit:1 | 999ms]"),
            (127, 1000, "[exit:127 | 1.0s]"),
            (124, 1249, "[exit:124 | 1.2s]"),
            (2, 61_500, "[exit:2 | 61.5s]"),
        ];
        for (code, ms, want) in cases {
            assert_eq!(footer(code, Duration::from_millis(ms)), want);
        }
    }
}
