//! Concurrent writers: threads that each hold a store of their own on the
//! same file or database (as separate `clix` processes would) and store
//! memories one transaction each, all at once.

use std::sync::Barrier;
use std::time::Instant;

use clix_memory::Store;

use super::corpus::{Corpus, Synthetic, TOPICS};

/// Memories stored per measurement, whatever the number of writers.
pub(super) const STORES: usize = 2000;

/// Stores per second from `writers` threads storing [`STORES`] memories in
/// all (vectors given by the synthetic embedder) into the store at
/// `location`, each thread its own `Store`. The stores are opened first;
/// the clock runs from when all start to when the last is done.
pub(super) fn stores_per_second(location: &str, writers: usize, corpus: &mut Corpus) -> f64 {
    let per_writer = STORES / writers;
    let texts: Vec<Vec<String>> = (0..writers).map(|_| (0..per_writer).map(|_| corpus.note()).collect()).collect();
    let mut stores: Vec<Store> = (0..writers)
        .map(|_| Store::connect(location).and_then(|s| s.with_embedder(Box::new(Synthetic))).expect("store"))
        .collect();
    let start = Barrier::new(writers + 1);
    // The scope joins every writer before it returns its start time.
    let started = std::thread::scope(|s| {
        for (w, (store, texts)) in stores.iter_mut().zip(&texts).enumerate() {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for text in texts {
                    store.store(text, TOPICS[w % TOPICS.len()], "note", "bench").expect("a concurrent store");
                }
            });
        }
        start.wait();
        Instant::now()
    });
    let elapsed = started.elapsed();
    assert!(stores.iter_mut().all(|s| s.take_warnings().is_empty()));
    (per_writer * writers) as f64 / elapsed.as_secs_f64()
}
