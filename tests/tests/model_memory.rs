//! The property suite with `MemoryStore` on both sides: the model must be
//! deterministic (same ids and clock give the same rows, leases aside) before it
//! can judge a real store.

duraq_tests::model_suite!(memory_matches_itself, duraq_tests::MemoryFactory);
