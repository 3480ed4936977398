//! Markdown drawn for a terminal: the model's answer with ANSI styles
//! (bold, italics, inline code, headings, lists, quotes, code blocks,
//! tables, links as `text (url)`), wrapped to a width.
//!
//! Also [`to_safe_html`], Markdown as an HTML page's body (`clix replay
//! --html`) with nothing in it that runs or fetches.
//!
//! Pure: text in, text out. Whether to draw at all (a terminal that takes
//! styles, `NO_COLOR`, `--jsonl`) and how wide is the front end's choice;
//! this crate must not look at a terminal, print, or know the agent. The
//! agent hands over a step's text whole, so each is drawn as one document:
//! a list or a code block is never cut in two.

use pulldown_cmark::{Alignment, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const BOLD: &str = "\x1b[1m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const STRIKE: &str = "\x1b[9m";
const CODE: &str = "\x1b[36m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// `markdown` drawn for a terminal, wrapped to `width` columns (0: not
/// wrapped); it ends with one newline unless it is empty.
pub fn render(markdown: &str, width: usize) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut draw = Draw { width, ..Draw::default() };
    for event in Parser::new_ext(markdown, options) {
        draw.event(event);
    }
    draw.finish()
}

/// Markdown as HTML, with any HTML the text holds shown as text: a model's
/// reply (or what a workspace file made it quote) never runs in the page.
/// Links keep only web and mail addresses, and images become links, so
/// opening the page fetches nothing.
pub fn to_safe_html(text: &str) -> String {
    use pulldown_cmark::Event as Md;
    let safe = |url: pulldown_cmark::CowStr<'_>| -> pulldown_cmark::CowStr<'static> {
        let lower = url.to_ascii_lowercase();
        let web = ["http://", "https://", "mailto:"].iter().any(|p| lower.starts_with(p));
        if web { url.into_string().into() } else { "#".into() }
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let parser = Parser::new_ext(text, options).map(|event| match event {
        Md::Html(raw) | Md::InlineHtml(raw) => Md::Text(raw),
        Md::Start(Tag::Link { link_type, dest_url, title, id })
        | Md::Start(Tag::Image { link_type, dest_url, title, id }) => {
            Md::Start(Tag::Link { link_type, dest_url: safe(dest_url), title, id })
        }
        Md::End(TagEnd::Image) => Md::End(TagEnd::Link),
        other => other,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    html
}

/// What goes before each line of a block nested in a list or a quote.
#[derive(Default)]
struct Indent {
    /// On the block's first line (a list item's marker).
    first: String,
    /// On the lines after it.
    rest: String,
    /// Columns each takes.
    width: usize,
    first_used: bool,
}

/// A table being read, drawn at its end (columns need every row's width).
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    /// Each cell's drawn text and its width.
    rows: Vec<Vec<(String, usize)>>,
    /// The header's rows come first.
    header_rows: usize,
    cell: Option<(String, usize)>,
}

#[derive(Default)]
struct Draw {
    out: String,
    width: usize,
    /// The line being filled; `open` once its prefix is written.
    line: String,
    line_width: usize,
    open: bool,
    /// Whether the open line holds a word yet (after its prefix).
    words: bool,
    /// The word being read, and its columns; a space comes before it.
    word: String,
    word_width: usize,
    /// The styles in force where the word began: a line it opens starts with them.
    word_styles: Vec<&'static str>,
    space: bool,
    indents: Vec<Indent>,
    /// The styles in force, outermost first.
    styles: Vec<&'static str>,
    /// Each open list's next number (`None`: bullets).
    lists: Vec<Option<u64>>,
    /// Each open link's address and the text seen inside it.
    links: Vec<(String, String)>,
    code_block: bool,
    /// A blank line goes before the next block.
    blank: bool,
    table: Option<Table>,
}

impl Draw {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code_block => self.lines(&text, Some(CODE)),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                self.push_style(CODE);
                self.text(&code);
                self.pop_style();
            }
            Event::Html(html) => self.lines(&html, None),
            Event::InlineHtml(html) => self.text(&html),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => {
                self.place_word();
                self.newline();
            }
            Event::Rule => {
                self.block();
                let rule = "─".repeat(if self.width == 0 { 40 } else { self.width.min(40) });
                self.whole_line(&rule, Some(DIM));
                self.blank = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block(),
            Tag::Heading { level, .. } => {
                self.block();
                self.push_style(BOLD);
                if level == HeadingLevel::H1 {
                    self.push_style(UNDERLINE);
                }
            }
            Tag::BlockQuote(_) => {
                self.block();
                let bar = format!("{DIM}│{RESET} ");
                self.indents.push(Indent { first: bar.clone(), rest: bar, width: 2, first_used: false });
            }
            Tag::CodeBlock(_) => {
                self.block();
                self.code_block = true;
            }
            Tag::HtmlBlock => self.block(),
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block();
                } else {
                    self.place_word();
                    self.newline();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.place_word();
                self.newline();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => format!("{} ", ["•", "◦", "▪"][depth.saturating_sub(1) % 3]),
                };
                let width = marker.width();
                self.indents.push(Indent { first: marker, rest: " ".repeat(width), width, first_used: false });
            }
            Tag::Emphasis => self.push_style(ITALIC),
            Tag::Strong => self.push_style(BOLD),
            Tag::Strikethrough => self.push_style(STRIKE),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push((dest_url.to_string(), String::new()));
            }
            Tag::Table(alignments) => {
                self.block();
                self.table = Some(Table { alignments, ..Table::default() });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(table) = &mut self.table {
                    table.cell = Some((String::new(), 0));
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.end_block(),
            TagEnd::HtmlBlock => self.end_lines(None),
            TagEnd::CodeBlock => {
                self.end_lines(Some(CODE));
                self.code_block = false;
            }
            TagEnd::Heading(level) => {
                if level == HeadingLevel::H1 {
                    self.pop_style();
                }
                self.pop_style();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.end_block();
                self.indents.pop();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.blank = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.place_word();
                self.newline();
                self.indents.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                if let Some((url, text)) = self.links.pop() {
                    // An autolink shows its address already.
                    let shown = url.is_empty() || url == text || url.strip_prefix("mailto:") == Some(&text);
                    if !shown {
                        self.text(&format!(" ({url})"));
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableCell => {
                if let Some(table) = &mut self.table
                    && let Some(cell) = table.cell.take()
                    && let Some(row) = table.rows.last_mut()
                {
                    row.push(cell);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.draw_table(&table);
                }
                self.blank = true;
            }
            _ => {}
        }
    }

    /// Words of running text; a space ends a word, a line is wrapped only
    /// between words.
    fn text(&mut self, text: &str) {
        for (_, seen) in &mut self.links {
            seen.push_str(text);
        }
        if let Some(cell) = self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            cell.0.push_str(text);
            cell.1 += text.width();
            return;
        }
        for c in text.chars() {
            if c == ' ' || c == '\n' {
                self.place_word();
                self.space = true;
            } else {
                self.begin_word();
                self.word.push(c);
                self.word_width += c.width().unwrap_or(0);
            }
        }
    }

    /// A code block's or an HTML block's text: its lines as they are,
    /// never wrapped.
    fn lines(&mut self, text: &str, style: Option<&str>) {
        for c in text.chars() {
            if c == '\n' {
                let line = std::mem::take(&mut self.word);
                self.whole_line(&line, style);
            } else {
                self.word.push(c);
            }
        }
    }

    fn begin_word(&mut self) {
        if self.word.is_empty() {
            self.word_styles.clone_from(&self.styles);
        }
    }

    /// A style code, written where the text it applies to is.
    fn code(&mut self, code: &str) {
        match self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            Some(cell) => cell.0.push_str(code),
            None => {
                self.begin_word();
                self.word.push_str(code);
            }
        }
    }

    fn push_style(&mut self, style: &'static str) {
        self.code(style);
        self.styles.push(style);
    }

    /// Ends the innermost style: a reset, then the outer ones again (bold
    /// and dim share their off code).
    fn pop_style(&mut self) {
        self.styles.pop();
        let again: String = std::iter::once(RESET).chain(self.styles.iter().copied()).collect();
        self.code(&again);
    }

    /// The word read so far onto the line, on a new line when it does not fit.
    fn place_word(&mut self) {
        let word = std::mem::take(&mut self.word);
        let width = std::mem::take(&mut self.word_width);
        if width == 0 {
            // Only style codes: the next line starts with the styles in force.
            if self.open {
                self.line.push_str(&word);
            }
            return;
        }
        let space = std::mem::take(&mut self.space) && self.words;
        if self.words && self.width > 0 && self.line_width + usize::from(space) + width > self.width {
            self.newline();
        } else if space {
            self.line.push(' ');
            self.line_width += 1;
        }
        let styles = std::mem::take(&mut self.word_styles);
        self.open_line(&styles);
        self.line.push_str(&word);
        self.line_width += width;
        self.words = true;
    }

    /// Starts the line: each enclosing list's or quote's prefix, then `styles`.
    fn open_line(&mut self, styles: &[&str]) {
        if self.open {
            return;
        }
        for indent in &mut self.indents {
            let prefix = if indent.first_used { &indent.rest } else { &indent.first };
            self.line.push_str(prefix);
            indent.first_used = true;
        }
        self.line_width = self.indents.iter().map(|i| i.width).sum();
        self.line.extend(styles.iter().copied());
        self.open = true;
    }

    /// Ends the open line, if any.
    fn newline(&mut self) {
        if !self.open {
            return;
        }
        // Styles end with the line, so the next line's prefix is plain.
        if self.line.rfind('\x1b').is_some_and(|at| !self.line[at..].starts_with(RESET)) {
            self.line.push_str(RESET);
        }
        self.out.push_str(self.line.trim_end_matches(' '));
        self.out.push('\n');
        self.line.clear();
        self.line_width = 0;
        self.open = false;
        self.words = false;
        self.space = false;
    }

    /// The end of a block of [`Draw::lines`]: its last line if it had no newline.
    fn end_lines(&mut self, style: Option<&str>) {
        if !self.word.is_empty() {
            let rest = std::mem::take(&mut self.word);
            self.whole_line(&rest, style);
        }
        self.blank = true;
    }

    /// One whole line (a code line, a rule), never wrapped.
    fn whole_line(&mut self, text: &str, style: Option<&str>) {
        self.open_line(&self.styles.clone());
        match style {
            Some(style) if !text.is_empty() => self.line.push_str(&format!("{style}{text}{RESET}")),
            _ => self.line.push_str(text),
        }
        self.words = true;
        self.newline();
    }

    /// Before a block: the line before it ends, and a blank line parts it
    /// from the block before.
    fn block(&mut self) {
        self.place_word();
        self.newline();
        if std::mem::take(&mut self.blank) && !self.out.is_empty() {
            let bars: String = self.indents.iter().map(|i| i.rest.as_str()).collect();
            self.out.push_str(bars.trim_end());
            self.out.push('\n');
        }
    }

    fn end_block(&mut self) {
        self.place_word();
        self.newline();
        self.blank = true;
    }

    /// Columns as wide as their widest cell, two spaces apart, the header
    /// bold and underlined by a rule.
    fn draw_table(&mut self, table: &Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> =
            (0..columns).map(|c| table.rows.iter().filter_map(|r| r.get(c)).map(|c| c.1).max().unwrap_or(0)).collect();
        for (i, row) in table.rows.iter().enumerate() {
            let mut line = String::new();
            for (c, width) in widths.iter().enumerate() {
                let (text, used) = row.get(c).map_or(("", 0), |(t, w)| (t.as_str(), *w));
                let pad = width - used;
                let (left, right) = match table.alignments.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                if c > 0 {
                    line.push_str("  ");
                }
                line.push_str(&" ".repeat(left));
                if i < table.header_rows {
                    line.push_str(&format!("{BOLD}{text}{RESET}"));
                } else {
                    line.push_str(text);
                }
                line.push_str(&" ".repeat(right));
            }
            self.open_line(&self.styles.clone());
            self.line.push_str(&line);
            self.words = true;
            self.newline();
            if i + 1 == table.header_rows {
                let total = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
                self.whole_line(&"─".repeat(total), Some(DIM));
            }
        }
    }

    fn finish(mut self) -> String {
        self.place_word();
        self.newline();
        let end = self.out.trim_end_matches('\n').len();
        self.out.truncate(end);
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawn text with its codes spelt out, for readable expectations.
    fn shown(markdown: &str, width: usize) -> String {
        render(markdown, width)
            .replace(BOLD, "<b>")
            .replace(ITALIC, "<i>")
            .replace(UNDERLINE, "<u>")
            .replace(STRIKE, "<s>")
            .replace(CODE, "<code>")
            .replace(DIM, "<dim>")
            .replace(RESET, "<0>")
    }

    #[test]
    fn markdown_table() {
        let cases: &[(&str, &str)] = &[
            ("plain words", "plain words\n"),
            ("", ""),
            ("a **bold** word", "a <b>bold<0> word\n"),
            ("some *italics* and _more_", "some <i>italics<0> and <i>more<0>\n"),
            ("run `ls -la` here", "run <code>ls -la<0> here\n"),
            ("***both***", "<i><b>both<0><i><0>\n"),
            ("**bold *and italic* inside**", "<b>bold <i>and italic<0><b> inside<0>\n"),
            ("~~gone~~", "<s>gone<0>\n"),
            ("# Title", "<b><u>Title<0><b><0>\n"),
            ("## Part\ntext", "<b>Part<0>\n\ntext\n"),
            ("- one\n- two", "• one\n• two\n"),
            ("1. first\n2. second", "1. first\n2. second\n"),
            ("3. three\n4. four", "3. three\n4. four\n"),
            ("- outer\n  - inner\n- next", "• outer\n  ◦ inner\n• next\n"),
            ("1. a\n   - b", "1. a\n   ◦ b\n"),
            ("- [x] done\n- [ ] to do", "• [x] done\n• [ ] to do\n"),
            ("- a\n\n- b", "• a\n\n• b\n"),
            ("para\n\n- item\n\nafter", "para\n\n• item\n\nafter\n"),
            ("```sh\nls -la\n  cd x\n```", "<code>ls -la<0>\n<code>  cd x<0>\n"),
            ("    indented code", "<code>indented code<0>\n"),
            ("see [the docs](https://x.dev/d) now", "see the docs (https://x.dev/d) now\n"),
            ("<https://x.dev>", "https://x.dev\n"),
            ("![a cat](cat.png)", "a cat (cat.png)\n"),
            ("> quoted\n> text", "<dim>│<0> quoted text\n"),
            ("line one  \nline two", "line one\nline two\n"),
            ("soft\nbreak", "soft break\n"),
            ("a\n\n---\n\nb", "a\n\n<dim>────────────────────────────────────────<0>\n\nb\n"),
            (
                "| name | n |\n|---|--:|\n| a | 1 |\n| bbb | 22 |",
                "<b>name<0>   <b>n<0>\n<dim>────────<0>\na      1\nbbb   22\n",
            ),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(markdown, want)| shown(markdown, 0) != *want)
            .map(|(markdown, want)| format!("{markdown:?}\n  got  {:?}\n  want {want:?}", shown(markdown, 0)))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn wrapping_keeps_words_whole_and_indents_under_the_marker() {
        let cases: &[(&str, usize, &str)] = &[
            ("the quick brown fox jumps", 10, "the quick\nbrown fox\njumps\n"),
            ("- the quick brown fox", 12, "• the quick\n  brown fox\n"),
            ("1. **bold words** wrap", 10, "1. <b>bold<0>\n   <b>words<0>\n   wrap\n"),
            ("> a quote that wraps", 10, "<dim>│<0> a quote\n<dim>│<0> that\n<dim>│<0> wraps\n"),
            ("averyveryverylongword x", 5, "averyveryverylongword\nx\n"),
            ("```\na code line is never wrapped\n```", 5, "<code>a code line is never wrapped<0>\n"),
            ("日本語 の 文章", 6, "日本語\nの\n文章\n"),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(markdown, width, want)| shown(markdown, *width) != *want)
            .map(|(markdown, width, want)| {
                format!("{markdown:?} at {width}\n  got  {:?}\n  want {want:?}", shown(markdown, *width))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
