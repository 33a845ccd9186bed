/* errors: next */
