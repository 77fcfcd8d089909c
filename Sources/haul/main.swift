print("haul: not yet")
