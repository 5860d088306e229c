"""Real data sets: digits (embedded), MNIST, CIFAR-10/100, CoLA."""
