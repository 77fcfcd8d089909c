enum HaulIOPlaceholder {}
