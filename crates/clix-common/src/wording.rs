//! Words about time that a model reads in several places: the footer's
//! duration and the line a time-out adds, whoever stopped the program
//! (the shell, the sandbox, a remote environment).

use std::time::Duration;

/// Whole milliseconds below one second (`0ms`, `12ms`), seconds with one
/// decimal from one second up (`1.2s`).
pub fn short_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 { format!("{ms}ms") } else { format!("{:.1}s", d.as_secs_f64()) }
}

/// The line shown above the footer when a command line ran out of time.
pub fn timeout_line(limit: Duration) -> String {
    let limit = if limit.subsec_millis() == 0 { format!("{}s", limit.as_secs()) } else { short_duration(limit) };
    format!("timed out after {limit}; raise with --timeout or run it in the background")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_footer_writes_them() {
        for (ms, text) in [(0, "0ms"), (12, "12ms"), (999, "999ms"), (1000, "1.0s"), (1234, "1.2s"), (61_000, "61.0s")]
        {
            assert_eq!(short_duration(Duration::from_millis(ms)), text);
        }
        assert_eq!(
            timeout_line(Duration::from_secs(30)),
            "timed out after 30s; raise with --timeout or run it in the background"
        );
        assert!(timeout_line(Duration::from_millis(1500)).starts_with("timed out after 1.5s;"));
    }
}
