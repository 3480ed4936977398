//! Overflow previews: the first and last lines of an output that is too long,
//! cut on character boundaries, with exact totals.

/// Exact size of a text, as the marker line reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextStats {
    pub lines: usize,
    pub bytes: usize,
}

impl TextStats {
    /// Lines are counted like `wc -l`, plus a final line without a newline.
    pub(crate) fn of(text: &str) -> Self {
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        let unterminated = usize::from(!text.is_empty() && !text.ends_with('\n'));
        TextStats { lines: newlines + unterminated, bytes: text.len() }
    }
}

/// A head-and-tail excerpt of a long text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Preview {
    /// The first lines, each ending in `\n`.
    pub head: String,
    /// 1-based number of the last line shown (fully or cut) in `head`.
    pub head_end: usize,
    /// The last lines, each ending in `\n`; empty when the head reached the end.
    pub tail: String,
    /// 1-based number of the first line shown in `tail` (0 when `tail` is empty).
    pub tail_start: usize,
    /// Some line was too long for the byte budget and was cut.
    pub cut_long_lines: bool,
}

const CUT_MARK: &str = "…";

/// Head and tail of `text`: `head_lines` first lines and `tail_lines` last
/// lines, together at most about `max_bytes`. The byte budget is shared in
/// proportion to the line counts, so one 2 MB line cannot blow it up.
pub(crate) fn preview(text: &str, head_lines: usize, tail_lines: usize, max_bytes: usize) -> Preview {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let head_count = head_lines.min(lines.len());
    let tail_count = tail_lines.min(lines.len() - head_count);
    let head_budget =
        if tail_count == 0 { max_bytes } else { max_bytes * head_lines.max(1) / (head_lines + tail_lines).max(1) };
    let tail_budget = max_bytes.saturating_sub(head_budget);

    let mut cut_long_lines = false;
    let mut head = String::new();
    let mut head_end = 0;
    for line in &lines[..head_count] {
        let room = head_budget.saturating_sub(head.len());
        head_end += 1;
        if line.len() <= room {
            head.push_str(line);
        } else {
            head.push_str(floor_prefix(line, room));
            head.push_str(CUT_MARK);
            head.push('\n');
            cut_long_lines = true;
            break;
        }
    }

    let mut tail_parts: Vec<String> = Vec::new();
    let mut tail_len = 0;
    let mut tail_start = 0;
    let first_tail_line = lines.len() - tail_count;
    for (index, line) in lines.iter().enumerate().skip(first_tail_line).rev() {
        let room = tail_budget.saturating_sub(tail_len);
        tail_start = index + 1;
        if line.len() <= room {
            tail_len += line.len();
            tail_parts.push(line.to_string());
        } else {
            tail_parts.push(format!("{CUT_MARK}{}", ceil_suffix(line, room)));
            cut_long_lines = true;
            break;
        }
    }
    tail_parts.reverse();
    let mut tail = tail_parts.concat();
    if !tail.is_empty() && !tail.ends_with('\n') {
        tail.push('\n');
    }
    if !head.ends_with('\n') && !head.is_empty() {
        head.push('\n');
    }
    Preview { head, head_end, tail, tail_start, cut_long_lines }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
fn floor_prefix(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` of at most `max` bytes that starts on a char boundary.
fn ceil_suffix(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn stats_table() {
        let cases = [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\r\nb\r\n", 2), ("\n\n", 2)];
        for (text, lines) in cases {
            assert_eq!(TextStats::of(text).lines, lines, "{text:?}");
            assert_eq!(TextStats::of(text).bytes, text.len());
        }
    }

    #[test]
    fn head_and_tail_lines() {
        let text = numbered(5000);
        let p = preview(&text, 150, 50, 16 * 1024);
        assert_eq!(p.head_end, 150);
        assert_eq!(p.tail_start, 4951);
        assert!(p.head.starts_with("line 1\n"));
        assert!(p.head.ends_with("line 150\n"));
        assert!(p.tail.starts_with("line 4951\n"));
        assert!(p.tail.ends_with("line 5000\n"));
        assert!(!p.cut_long_lines);
    }

    #[test]
    fn one_huge_line_is_cut_within_budget() {
        let text = "x".repeat(2 * 1024 * 1024);
        let p = preview(&text, 150, 50, 16 * 1024);
        assert!(p.head.len() <= 16 * 1024 + CUT_MARK.len() + 1);
        assert!(p.cut_long_lines);
        assert_eq!(p.head_end, 1);
        assert_eq!(p.tail, "");
    }

    #[test]
    fn cuts_never_split_a_character() {
        // Every budget from 0 to 40 bytes over a line of 3-byte characters.
        let line = format!("{}\n", "日".repeat(30));
        let text = format!("{line}{line}{line}");
        for budget in 0..40 {
            let p = preview(&text, 1, 1, budget);
            // Building the String already proves UTF-8 validity; check the cut mark.
            assert!(p.head.ends_with('\n'));
            assert!(p.head.chars().filter(|&c| c == '日').count() <= budget);
        }
    }

    #[test]
    fn tail_keeps_the_end_of_a_long_last_line() {
        let text = format!("{}{}END\n", numbered(3), "y".repeat(100_000));
        let p = preview(&text, 2, 2, 1000);
        assert!(p.tail.ends_with("END\n"), "{:?}", &p.tail[p.tail.len() - 10..]);
        assert!(p.tail.starts_with(CUT_MARK));
        assert_eq!(p.tail_start, 4);
        assert!(p.cut_long_lines);
    }

    #[test]
    fn crlf_lines_are_kept_whole() {
        let text: String = (1..=10).map(|i| format!("r{i}\r\n")).collect();
        let p = preview(&text, 2, 2, 1000);
        assert_eq!(p.head, "r1\r\nr2\r\n");
        assert_eq!(p.tail, "r9\r\nr10\r\n");
    }
}
