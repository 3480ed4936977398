//! The words of a call as every grammar of this module reads them: operands,
//! options (with a value inline after `=` or as the next word), `--` and
//! `-h`/`--help`. One reader, so a static subcommand ([`super::Syntax`]) and
//! a tool whose parameters are data ([`super::typed`]) split words alike.

/// One word of a call, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word<'w> {
    /// Not an option: a bare word, `-` alone, or any word after `--`.
    Operand(&'w str),
    /// `-h` or `--help`.
    Help,
    /// `-t`, `--topic`, or `--topic=ops` (then `inline` is `ops`; only a
    /// long option takes its value after `=`).
    Option { flag: &'w str, inline: Option<&'w str> },
}

/// The words of a call, read one at a time.
pub(crate) struct Words<'w> {
    rest: std::slice::Iter<'w, String>,
    options_over: bool,
}

impl<'w> Words<'w> {
    pub(crate) fn new(words: &'w [String]) -> Self {
        Words { rest: words.iter(), options_over: false }
    }

    /// Every later word is an operand (`--` was given, or the operands are
    /// a program's argv).
    pub(crate) fn end_options(&mut self) {
        self.options_over = true;
    }

    /// The next word, whatever it looks like: an option's value (`-t -odd`
    /// gives the topic `-odd`, `--limit -5` the number -5).
    pub(crate) fn value(&mut self) -> Option<&'w str> {
        self.rest.next().map(String::as_str)
    }
}

impl<'w> Iterator for Words<'w> {
    type Item = Word<'w>;

    fn next(&mut self) -> Option<Word<'w>> {
        let word = self.rest.next()?.as_str();
        if self.options_over || word == "-" || !word.starts_with('-') {
            return Some(Word::Operand(word));
        }
        if word == "--" {
            self.options_over = true;
            return self.next();
        }
        if word == "-h" || word == "--help" {
            return Some(Word::Help);
        }
        Some(match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => Word::Option { flag, inline: Some(value) },
            _ => Word::Option { flag: word, inline: None },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_reads_as_one_thing() {
        let words: Vec<String> = ["x", "-", "-t", "--topic=a=b", "-h", "--", "--json", "-v"].map(String::from).into();
        let read: Vec<Word> = Words::new(&words).collect();
        assert_eq!(
            read,
            [
                Word::Operand("x"),
                Word::Operand("-"),
                Word::Option { flag: "-t", inline: None },
                Word::Option { flag: "--topic", inline: Some("a=b") },
                Word::Help,
                Word::Operand("--json"),
                Word::Operand("-v"),
            ]
        );
    }

    #[test]
    fn a_value_is_the_next_word_whatever_it_looks_like() {
        let words: Vec<String> = ["-n", "-5", "--", "x"].map(String::from).into();
        let mut read = Words::new(&words);
        assert_eq!(read.next(), Some(Word::Option { flag: "-n", inline: None }));
        assert_eq!(read.value(), Some("-5"));
        assert_eq!(read.value(), Some("--"));
        assert_eq!(read.next(), Some(Word::Operand("x")));
        assert_eq!(read.value(), None);
    }
}
