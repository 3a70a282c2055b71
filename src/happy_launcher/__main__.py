from happy_launcher.cli.main import main

main()
