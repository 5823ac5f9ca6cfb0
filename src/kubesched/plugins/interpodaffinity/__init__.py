"""InterPodAffinity: required and preferred pod (anti-)affinity between pods."""
