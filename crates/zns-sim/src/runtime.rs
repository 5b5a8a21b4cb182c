//! Runtime: being written.
#[derive(Clone)] pub struct Handle; pub struct Runtime; pub struct JoinHandle<T>(std::marker::PhantomData<T>);
