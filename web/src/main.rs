//! The app's entry point; everything else is in the library.

fn main() {
    ccm_web::mount();
}
