"""Issue 53 (import an Argos package, fine-tune it): the packages it is measured on."""
