//! awk's associative arrays: insertion-ordered, with tombstones (O(1)
//! delete); `order.rs` turns the insertion order into gawk's.
//!
//! clix patches (docs/bashkit-patches.md):
//! - "a cheap budget check": keys are hashed with foldhash, randomly
//!   seeded as jq's maps are, rather than SipHash, a tenth of an awk loop
//!   filling an array.
//! - "awk's record loop": each key is stored once, in `entries`, with its
//!   hash; the index holds only positions, so a new key costs one
//!   allocation and growing the index rehashes no string. And an array
//!   whose keys are the integers from 0 or 1 in order (`for (i = 0; i < n;
//!   i++) a[i] = …`, `split`) keeps its elements by position with no key
//!   stored or hashed, until any other key or a delete inside the run
//!   moves them, in the same order, to the hashed form. Either form lists
//!   the same keys in the same order.

use std::borrow::Cow;
use std::hash::BuildHasher as _;

use super::super::value::Value;
use super::Elem;

#[derive(Debug, Default)]
pub(in crate::builtins::awk) struct AwkArray {
    run: Run,
    /// Positions in `entries` of the live keys.
    index: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    /// Keys in insertion order with their hash; `None` where deleted.
    entries: Vec<Option<Entry>>,
}

/// The elements of keys `base`, `base + 1`, … while every key so far came
/// in that order (`spilled` once one did not; then `elems` is empty).
#[derive(Debug, Default)]
struct Run {
    base: usize,
    elems: Vec<Elem>,
    spilled: bool,
}

#[derive(Debug)]
struct Entry {
    hash: u64,
    key: String,
    elem: Elem,
}

/// Where a key not in the array would go.
enum Vacant {
    /// The next key of the run.
    Next(usize),
    Hashed(u64),
}

/// `k` as the integer it spells in canonical form (awk's string of that
/// number): digits without a leading zero, or "0".
fn run_key(k: &str) -> Option<usize> {
    let b = k.as_bytes();
    if b.is_empty()
        || b.len() > 18
        || (b[0] == b'0' && b.len() > 1)
        || !b.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    k.parse().ok()
}

impl AwkArray {
    pub(in crate::builtins::awk) fn len(&self) -> usize {
        self.run.elems.len() + self.index.len()
    }

    fn run_position(&self, k: &str) -> Option<usize> {
        let n = run_key(k)?.checked_sub(self.run.base)?;
        (n < self.run.elems.len()).then_some(n)
    }

    fn hashed_position(&self, k: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(k);
        let entries = &self.entries;
        self.index
            .find(hash, |&i| entries[i].as_ref().is_some_and(|e| e.key == k))
            .copied()
    }

    pub(in crate::builtins::awk) fn get(&self, k: &str) -> Option<&Elem> {
        if !self.run.spilled {
            return self.run_position(k).map(|i| &self.run.elems[i]);
        }
        let i = self.hashed_position(k)?;
        self.entries[i].as_ref().map(|e| &e.elem)
    }

    pub(in crate::builtins::awk) fn contains(&self, k: &str) -> bool {
        self.get(k).is_some()
    }

    /// The element of `k`, or where it would go. One hash of the key at
    /// most (clix patch, "awk expressions without a future per node": a
    /// loop filling an array hashed each new key three times).
    fn slot(&mut self, k: &str) -> Result<&mut Elem, Vacant> {
        if !self.run.spilled {
            if let Some(i) = self.run_position(k) {
                return Ok(&mut self.run.elems[i]);
            }
            match run_key(k) {
                Some(n) if self.run.elems.is_empty() && n <= 1 => return Err(Vacant::Next(n)),
                Some(n)
                    if !self.run.elems.is_empty() && n == self.run.base + self.run.elems.len() =>
                {
                    return Err(Vacant::Next(n));
                }
                _ => self.spill(),
            }
        }
        let hash = self.hasher.hash_one(k);
        let entries = &self.entries;
        match self
            .index
            .find(hash, |&i| entries[i].as_ref().is_some_and(|e| e.key == k))
        {
            Some(&i) => self.entries[i]
                .as_mut()
                .map(|e| &mut e.elem)
                .ok_or(Vacant::Hashed(hash)),
            None => Err(Vacant::Hashed(hash)),
        }
    }

    fn add(&mut self, at: Vacant, key: String, elem: Elem) {
        match at {
            Vacant::Next(n) => {
                if self.run.elems.is_empty() {
                    self.run.base = n;
                }
                self.run.elems.push(elem);
            }
            Vacant::Hashed(hash) => self.push_hashed(hash, key, elem),
        }
    }

    fn push_hashed(&mut self, hash: u64, key: String, elem: Elem) {
        let entries = &self.entries;
        let at = entries.len();
        self.index
            .insert_unique(hash, at, |&i| entries[i].as_ref().map_or(0, |e| e.hash));
        self.entries.push(Some(Entry { hash, key, elem }));
    }

    /// Moves the run's elements, in order, to the hashed form.
    fn spill(&mut self) {
        self.run.spilled = true;
        let base = self.run.base;
        for (i, elem) in std::mem::take(&mut self.run.elems).into_iter().enumerate() {
            let key = (base + i).to_string();
            let hash = self.hasher.hash_one(key.as_str());
            self.push_hashed(hash, key, elem);
        }
    }

    /// Insert or replace; returns the previous element.
    pub(in crate::builtins::awk) fn insert(&mut self, k: String, e: Elem) -> Option<Elem> {
        match self.slot(&k) {
            Ok(elem) => Some(std::mem::replace(elem, e)),
            Err(at) => {
                self.add(at, k, e);
                None
            }
        }
    }

    /// `insert` of a value, unless `k` holds a subarray (then `Err(k)`,
    /// the array unchanged); returns the previous value.
    pub(in crate::builtins::awk) fn insert_val(
        &mut self,
        k: String,
        v: Value,
    ) -> Result<Option<Value>, String> {
        match self.slot(&k) {
            Ok(Elem::Val(old)) => Ok(Some(std::mem::replace(old, v))),
            Ok(Elem::Arr(_)) => Err(k),
            Err(at) => {
                self.add(at, k, Elem::Val(v));
                Ok(None)
            }
        }
    }

    pub(in crate::builtins::awk) fn remove(&mut self, k: &str) -> Option<Elem> {
        if !self.run.spilled {
            let i = self.run_position(k)?;
            if i + 1 == self.run.elems.len() {
                return self.run.elems.pop();
            }
            self.spill();
        }
        let hash = self.hasher.hash_one(k);
        let entries = &self.entries;
        let (i, _) = self
            .index
            .find_entry(hash, |&i| entries[i].as_ref().is_some_and(|e| e.key == k))
            .ok()?
            .remove();
        let old = self.entries[i].take().map(|e| e.elem);
        if self.entries.len() > 32 && self.index.len() * 2 < self.entries.len() {
            self.compact();
        }
        old
    }

    fn compact(&mut self) {
        self.entries.retain(Option::is_some);
        self.index.clear();
        let entries = &self.entries;
        for (at, e) in entries.iter().enumerate() {
            let hash = e.as_ref().map_or(0, |e| e.hash);
            self.index
                .insert_unique(hash, at, |&i| entries[i].as_ref().map_or(0, |e| e.hash));
        }
    }

    /// The keys in insertion order.
    pub(in crate::builtins::awk) fn keys(&self) -> Vec<String> {
        self.iter().map(|(k, _)| k.into_owned()).collect()
    }

    /// Empties the array (back to a run), returning its elements.
    pub(in crate::builtins::awk) fn drain(&mut self) -> Vec<(String, Elem)> {
        let base = self.run.base;
        let run = std::mem::take(&mut self.run.elems);
        let run = run
            .into_iter()
            .enumerate()
            .map(|(i, e)| ((base + i).to_string(), e));
        let hashed = std::mem::take(&mut self.entries)
            .into_iter()
            .flatten()
            .map(|e| (e.key, e.elem));
        let all = run.chain(hashed).collect();
        *self = AwkArray {
            hasher: self.hasher.clone(),
            ..AwkArray::default()
        };
        all
    }

    /// Keys and elements in insertion order.
    pub(in crate::builtins::awk) fn iter(&self) -> impl Iterator<Item = (Cow<'_, str>, &Elem)> {
        let base = self.run.base;
        let run = self
            .run
            .elems
            .iter()
            .enumerate()
            .map(move |(i, e)| (Cow::Owned((base + i).to_string()), e));
        let hashed = self
            .entries
            .iter()
            .flatten()
            .map(|e| (Cow::Borrowed(e.key.as_str()), &e.elem));
        run.chain(hashed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(n: f64) -> Elem {
        Elem::Val(Value::Num(n))
    }

    fn keys_after(ops: &[(&str, bool)]) -> Vec<String> {
        let mut a = AwkArray::default();
        for (k, insert) in ops {
            if *insert {
                a.insert(k.to_string(), val(1.0));
            } else {
                a.remove(k);
            }
        }
        assert_eq!(a.len(), a.keys().len());
        a.keys()
    }

    /// The run form and the hashed form list the same keys in insertion
    /// order, whatever breaks the run.
    #[test]
    fn a_run_and_its_spill_keep_insertion_order() {
        let cases: &[(&[(&str, bool)], &[&str])] = &[
            (&[("0", true), ("1", true), ("2", true)], &["0", "1", "2"]),
            (&[("1", true), ("2", true), ("x", true)], &["1", "2", "x"]),
            (&[("1", true), ("3", true), ("2", true)], &["1", "3", "2"]),
            (&[("0", true), ("1", true), ("01", true)], &["0", "1", "01"]),
            (
                &[("0", true), ("1", true), ("0", false), ("0", true)],
                &["1", "0"],
            ),
            (
                &[("0", true), ("1", true), ("1", false), ("1", true)],
                &["0", "1"],
            ),
            (&[("2", true), ("3", true)], &["2", "3"]),
            (&[("1", true), ("1", true), ("-1", true)], &["1", "-1"]),
            (&[("0", true), ("7", false), ("1", true)], &["0", "1"]),
        ];
        for (ops, want) in cases {
            assert_eq!(keys_after(ops), *want, "{ops:?}"); // debug-ok: test assert
        }
    }

    #[test]
    fn lookups_agree_in_both_forms() {
        let mut a = AwkArray::default();
        for i in 1..=5 {
            a.insert(i.to_string(), val(i as f64));
        }
        assert!(a.contains("3") && !a.contains("03") && !a.contains("0") && !a.contains("6"));
        assert!(matches!(a.get("5"), Some(Elem::Val(Value::Num(n))) if *n == 5.0));
        a.insert("k".into(), val(0.0));
        assert!(a.contains("3") && !a.contains("03") && a.contains("k"));
        assert!(matches!(a.get("5"), Some(Elem::Val(Value::Num(n))) if *n == 5.0));
        assert_eq!(a.drain().len(), 6);
        assert_eq!(a.len(), 0);
        a.insert("0".into(), val(0.0));
        assert_eq!(a.keys(), ["0"]);
    }
}
