//! The conformance suite against `MemoryStore`, the reference model: the suite and
//! the model must agree before either is trusted to judge a real store.

use duraq_tests::MemoryFactory;

duraq_tests::store_suite!(memory, MemoryFactory);
