print("attestctl")
