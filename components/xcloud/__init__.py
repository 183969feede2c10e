"""What joins two clouds' sites: links whose two halves are in different clouds. The per-cloud
packages (aws/, gcp/, azure/) never import each other; they import this package when a site
spans clouds, and it imports none of them."""
